package podman

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// Mount sources (docs/decisions.md, "Mount sources: checked, held, and
// verified inside"). A grant path is only a string; what the host resolves
// it to can change under brokerd, since a shell call under a writable grant
// can replace any folder inside that grant with a symlink. So every source
// is opened from "/" with openat2 and RESOLVE_NO_SYMLINKS (no symlink, magic
// link or not, in any component), checked to be the kind the tool needs
// and to keep clear of boxmaker's own files, and held open until the call
// is over. Podman cannot be handed the held descriptor (the kernel refuses
// to bind-mount an object of another mount namespace, and runc mounts in
// the container's), so the source goes to Podman as the checked path, and
// the toolkit, before it does anything else, compares the object it finds
// mounted at each path with the (device, inode) brokerd checked and
// refuses to run on a difference. Holding the descriptor keeps the inode
// alive, so its number cannot be reused by a new object in the meantime.

// objID is a filesystem object: the same pair is the same object however it
// was reached (bind mounts and other routes included).
type objID struct{ dev, ino uint64 }

// source is one checked mount source, held open.
type source struct {
	mount runner.Mount
	file  *os.File // O_PATH; closed by heldSources.Close
	id    objID
	chain []objID // the object, then its parent directories up to "/"
}

// heldSources are one call's sources, held until Close.
type heldSources []source

// Close closes every held descriptor.
func (h heldSources) Close() {
	for _, s := range h {
		s.file.Close()
	}
}

// toolkitMounts is what the toolkit checks inside the container.
func (h heldSources) toolkitMounts() []wire.ToolkitMount {
	ms := make([]wire.ToolkitMount, 0, len(h))
	for _, s := range h {
		ms = append(ms, wire.ToolkitMount{Path: s.mount.Path, Dev: s.id.dev, Ino: s.id.ino})
	}
	return ms
}

// mountRefused is the call's failure for a source brokerd will not mount.
func mountRefused(path, why string) error {
	return runner.Failed(fmt.Sprintf("podman: refused to mount %s: %s; %s", path, why, runbook.See("mount-source-refused")))
}

// openSources opens and checks every mount of s, before any container is
// made. On an error nothing stays open.
func openSources(s *runner.RunSpec, protected []string) (heldSources, error) {
	var held heldSources
	for _, m := range s.Mounts() {
		src, err := openSource(m, needDir(s.Args(), m.Path))
		if err != nil {
			held.Close()
			return nil, err
		}
		held = append(held, src)
	}
	if err := checkProtected(held, protected); err != nil {
		held.Close()
		return nil, err
	}
	return held, nil
}

// needDir says which kind of object a tool's mount must be (runner.specFor):
// shell mounts directories, write_file the directory above the file it
// writes (policy never matches the grant path itself), and read_file either
// the file named (when the grant path is that file) or a directory above it.
func needDir(args policy.Args, path string) bool {
	if a, ok := args.(policy.ReadFileArgs); ok {
		return a.Path != path
	}
	return true
}

// openSource opens m.Path without following a symlink anywhere and checks
// its kind.
func openSource(m runner.Mount, dir bool) (source, error) {
	if err := policy.CheckPath(m.Path); err != nil {
		return source{}, mountRefused(m.Path, "the path "+err.Error())
	}
	parentPath, name := filepath.Dir(m.Path), filepath.Base(m.Path)
	parent, err := openNoSymlinks(unix.AT_FDCWD, parentPath, 0)
	if err != nil {
		return source{}, mountRefused(m.Path, openWhy(err))
	}
	defer parent.Close()
	f := parent
	if m.Path != "/" {
		// Below the parent only: the last component is looked up in the
		// very directory just checked.
		if f, err = openNoSymlinks(int(parent.Fd()), name, unix.RESOLVE_BENEATH); err != nil {
			return source{}, mountRefused(m.Path, openWhy(err))
		}
	} else if f, err = openNoSymlinks(unix.AT_FDCWD, "/", 0); err != nil {
		return source{}, mountRefused(m.Path, openWhy(err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return source{}, mountRefused(m.Path, err.Error())
	}
	if why := kernelFS(int(f.Fd())); why != "" {
		f.Close()
		return source{}, mountRefused(m.Path, why)
	}
	src := source{mount: m, file: f, id: objID{st.Dev, st.Ino}}
	switch kind := st.Mode & unix.S_IFMT; {
	case dir && kind != unix.S_IFDIR:
		f.Close()
		return source{}, mountRefused(m.Path, "it is not a directory, and this tool mounts a directory there")
	case !dir && kind != unix.S_IFREG:
		f.Close()
		return source{}, mountRefused(m.Path, "it is not a regular file, and this tool mounts the file itself")
	case !dir && st.Nlink > 1:
		f.Close()
		return source{}, mountRefused(m.Path, fmt.Sprintf("the file has %d hard links, and another name of it could be one of boxmaker's own files", st.Nlink))
	}
	up := parent
	if m.Path == "/" {
		up = f
	}
	chain, err := ancestors(up)
	if err != nil {
		f.Close()
		return source{}, mountRefused(m.Path, "cannot walk up from it: "+err.Error())
	}
	if m.Path != "/" {
		chain = append([]objID{src.id}, chain...)
	}
	src.chain = chain
	return src, nil
}

// kernelFilesystems are the filesystems that hold the kernel's state rather
// than files: a bind of procfs gives the tool every host process and,
// through /proc/<pid>/root, cwd and fd, the files of any process its user
// may trace (another call's container); sysfs, cgroup and the rest are
// the kernel's controls. None is ever a grant's folder or file. (mqueue,
// configfs and fusectl are written as numbers: x/sys/unix has no name
// for them.)
var kernelFilesystems = map[int64]string{
	unix.PROC_SUPER_MAGIC:    "proc",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.DEVPTS_SUPER_MAGIC:  "devpts",
	0x19800202:               "mqueue",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.BPF_FS_MAGIC:        "bpf",
	0x62656570:               "configfs",
	0x65735543:               "fusectl",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.PSTOREFS_MAGIC:      "pstore",
	unix.BINFMTFS_MAGIC:      "binfmt_misc",
	unix.SELINUX_MAGIC:       "selinuxfs",
	unix.SMACK_MAGIC:         "smackfs",
	unix.NSFS_MAGIC:          "nsfs",
	unix.HUGETLBFS_MAGIC:     "hugetlbfs",
}

// kernelFS says why the object fd is on a kernel filesystem, or "". The
// filesystem is the held descriptor's (fstatfs), not the path's text: a
// bind mount of /proc elsewhere is procfs all the same. A filesystem
// brokerd cannot tell refuses.
func kernelFS(fd int) string {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return "brokerd cannot tell which filesystem it is on: " + err.Error()
	}
	if name, ok := kernelFilesystems[int64(sfs.Type)]; ok {
		return "it is on a kernel filesystem (" + name + "), which holds the kernel's and other processes' state, not files to grant"
	}
	return ""
}

// openNoSymlinks opens path (relative to dirfd) as an O_PATH descriptor,
// refusing a symlink in any component, the last included.
func openNoSymlinks(dirfd int, path string, resolve uint64) (*os.File, error) {
	for {
		fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: resolve | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue // a rename elsewhere raced the lookup; it is safe to try again
		}
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// openWhy says why a source could not be opened, in the owner's terms.
func openWhy(err error) string {
	switch {
	case errors.Is(err, unix.ENOENT):
		return "it does not exist"
	case errors.Is(err, unix.ELOOP):
		return "a component of the path is a symlink, and brokerd mounts nothing reached through one"
	case errors.Is(err, unix.ENOTDIR):
		return "a component of the path is not a directory"
	case errors.Is(err, unix.EXDEV):
		return "a component of the path moved while it was being opened"
	case errors.Is(err, unix.EACCES):
		return "brokerd's user may not look up a component of the path (it needs search permission on each folder of it)"
	case errors.Is(err, unix.ENOSYS):
		return "this kernel has no openat2 (Linux 5.6 or later is needed to open paths safely)"
	}
	return err.Error()
}

// maxDepth bounds a walk up the tree: a valid path has at most 2048
// components.
const maxDepth = policy.MaxPathBytes / 2

// ancestors is the object dir names, then each parent directory up to the
// root, found with openat(fd, "..") from the object itself rather than from
// a path, so that the walk follows the object wherever it was reached from.
func ancestors(dir *os.File) ([]objID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return nil, err
	}
	chain := []objID{{st.Dev, st.Ino}}
	fd := int(dir.Fd())
	owned := -1
	defer func() {
		if owned >= 0 {
			unix.Close(owned)
		}
	}()
	for range maxDepth {
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		if owned >= 0 {
			unix.Close(owned)
		}
		owned, fd = up, up
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, err
		}
		id := objID{st.Dev, st.Ino}
		if id == chain[len(chain)-1] {
			return chain, nil // ".." of the root is the root
		}
		chain = append(chain, id)
	}
	return nil, errors.New("the tree is deeper than any valid path")
}
