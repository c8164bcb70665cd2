package podman

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Protected paths: boxmaker's own files (its home, grants, config, the
// Podman service's socket), which no tool container may mount, mount a
// folder of, or mount a folder holding. Paths are compared as objects, two
// ways, either of which refuses:
//
//   - by (device, inode) along the chains of parent directories, walked up
//     with openat(fd, "..") from the held source and from each protected
//     path: another route to the same object (a symlink the configured
//     path goes through, a bind mount of the folder itself) is the same
//     object here;
//   - by the path inside the filesystem (device, and the mount's root in
//     /proc/self/mountinfo joined with the path below the mount point):
//     a walk up stops at a mount's root, so a bind mount of a folder inside
//     a protected one would hide that it lies inside; its path inside the
//     filesystem does not.

// place is an object's filesystem and its path from that filesystem's root.
type place struct{ dev, path string }

// within reports whether a is b or lies below it, in the same filesystem.
func (a place) within(b place) bool {
	return a.dev == b.dev && (a.path == b.path || b.path == "/" || strings.HasPrefix(a.path, b.path+"/"))
}

// protectedObj is one protected path as found at the time of a call.
type protectedObj struct {
	path   string
	exists bool
	chain  []objID // the object (or its nearest existing parent), then up to "/"
	at     place   // where it is, or would be, in its filesystem
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct{ dev, root, point string }

// readMounts is brokerd's mount table, by mount id.
func readMounts() (map[uint64]mountEntry, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	mounts := map[uint64]mountEntry{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			return nil, fmt.Errorf("a line of /proc/self/mountinfo has %d fields", len(f))
		}
		id, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, err
		}
		mounts[id] = mountEntry{dev: f[2], root: unescapeMount(f[3]), point: unescapeMount(f[4])}
	}
	return mounts, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// placeOf is where the object fd refers to lies in its filesystem.
func placeOf(mounts map[uint64]mountEntry, fd int) (place, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return place{}, err
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return place{}, errors.New("this kernel does not say which mount an object is on (Linux 5.8 or later is needed)")
	}
	m, ok := mounts[stx.Mnt_id]
	if !ok {
		return place{}, errors.New("its mount is not in /proc/self/mountinfo (mounts changed meanwhile)")
	}
	name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return place{}, err
	}
	rel, ok := strings.CutPrefix(name, m.point)
	switch {
	case strings.HasSuffix(name, " (deleted)"):
		return place{}, errors.New("it was deleted")
	case m.point == "/":
		rel = name
	case !ok || rel != "" && rel[0] != '/':
		return place{}, fmt.Errorf("its path %s is not below its mount point %s", name, m.point)
	}
	return place{dev: m.dev, path: path.Join(m.root, "/"+rel)}, nil
}

// protectedObjs opens each protected path (following symlinks: what is
// protected is the object the configured path names) and finds its chain
// and place. A path that does not exist is protected through its nearest
// existing parent: a mount there would hold it once it is made.
func protectedObjs(paths []string, mounts map[uint64]mountEntry) ([]protectedObj, error) {
	var out []protectedObj
	for _, p := range paths {
		po := protectedObj{path: p, exists: true}
		at, rest := filepath.Clean(p), ""
		for {
			fd, err := unix.Open(at, unix.O_PATH|unix.O_CLOEXEC, 0)
			// A path under a directory brokerd may not search (Podman's
			// rootful storage, root's 0700, when brokerd is not root) is
			// protected through its nearest parent brokerd can reach, as a
			// missing one is: a source brokerd could open cannot lie there.
			if (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES)) && at != "/" {
				po.exists, rest, at = false, path.Join(filepath.Base(at), rest), filepath.Dir(at)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("cannot open %s: %w", at, err)
			}
			f := os.NewFile(uintptr(fd), at)
			err = po.find(f, at, mounts)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			po.at.path = path.Join(po.at.path, rest)
			break
		}
		out = append(out, po)
	}
	return out, nil
}

// find fills in the chain and place of the protected object f, opened as at.
func (po *protectedObj) find(f *os.File, at string, mounts map[uint64]mountEntry) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	var err error
	if po.at, err = placeOf(mounts, int(f.Fd())); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		po.chain, err = ancestors(f)
		if !errors.Is(err, unix.EACCES) {
			return err
		}
		// Deployed, another role's state directory is its own (0700):
		// brokerd cannot look up ".." inside it, so the chain above it is
		// walked from its parent, found by the path it resolved to.
		if at, err = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err != nil {
			return err
		}
	}
	// O_PATH: only search is needed, not read (deployed, the home is 0711).
	dfd, err := unix.Open(filepath.Dir(at), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: filepath.Dir(at), Err: err}
	}
	dir := os.NewFile(uintptr(dfd), filepath.Dir(at))
	defer dir.Close()
	chain, err := ancestors(dir)
	po.chain = append([]objID{{st.Dev, st.Ino}}, chain...)
	return err
}

// checkProtected refuses a source that is, contains or lies inside a
// protected path.
func checkProtected(held heldSources, protected []string) error {
	if len(protected) == 0 || len(held) == 0 {
		return nil
	}
	mounts, err := readMounts()
	var objs []protectedObj
	if err == nil {
		objs, err = protectedObjs(protected, mounts)
	}
	if err != nil {
		// brokerd cannot tell what a mount would reach: fail closed.
		return mountRefused(held[0].mount.Path, "brokerd cannot see one of its own protected paths: "+err.Error())
	}
	for _, s := range held {
		at, err := placeOf(mounts, int(s.file.Fd()))
		if err != nil {
			return mountRefused(s.mount.Path, "brokerd cannot tell where it lies: "+err.Error())
		}
		for _, p := range objs {
			switch {
			case p.exists && (s.id == p.chain[0] || at == p.at):
				return mountRefused(s.mount.Path, "it is "+p.path+", one of boxmaker's own files")
			case p.exists && (slices.Contains(s.chain, p.chain[0]) || at.within(p.at)):
				return mountRefused(s.mount.Path, "it lies inside "+p.path+", one of boxmaker's own files")
			case slices.Contains(p.chain, s.id) || p.at.within(at):
				return mountRefused(s.mount.Path, "it contains "+p.path+", one of boxmaker's own files")
			}
		}
	}
	return nil
}
