package bxctl

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"boxmaker/roles/bxctl/internal/posixacl"
)

// The walk of `grants check --fix` (fixacl.go): every component of a grant
// path is opened from "/" without following a symlink, and held open, so
// the ACLs it reads and writes are those of the very objects it checked
// (set through the descriptor: fsetxattr on an O_PATH descriptor fails
// with EBADF, so directories are opened O_RDONLY|O_DIRECTORY|O_NOFOLLOW).

// node is one opened component.
type node struct {
	path string
	fd   int
	st   unix.Stat_t
}

func (n node) dir() bool { return n.st.Mode&unix.S_IFMT == unix.S_IFDIR }

// walked is a path's components, "/" first, all open.
type walked []node

func (w walked) close() {
	for _, n := range w {
		unix.Close(n.fd)
	}
}

// walk opens path (valid and absolute) component by component. A symlink,
// a missing component, or anything but a directory above the last, is an
// error saying which component; on an error nothing stays open.
func walk(path string) (walked, error) {
	fd, err := openRetry(func() (int, error) {
		return unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, fmt.Errorf("/ cannot be opened: %w", err)
	}
	w := walked{{path: "/", fd: fd}}
	fail := func(err error) (walked, error) { w.close(); return nil, err }
	if err := unix.Fstat(fd, &w[0].st); err != nil {
		return fail(err)
	}
	if path == "/" {
		return w, nil
	}
	comps := strings.Split(path[1:], "/")
	for i, c := range comps {
		at := "/" + strings.Join(comps[:i+1], "/")
		parent := w[len(w)-1].fd
		// O_PATH first: it opens whatever is there (a FIFO or a device
		// too) without side effects, so its kind is known before it is
		// opened for real.
		pfd, err := openRetry(func() (int, error) {
			return unix.Openat(parent, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if errors.Is(err, unix.ENOENT) {
			return fail(fmt.Errorf("%s does not exist", at))
		}
		if err != nil {
			return fail(fmt.Errorf("%s cannot be opened: %w", at, err))
		}
		var st unix.Stat_t
		err = unix.Fstat(pfd, &st)
		unix.Close(pfd)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", at, err))
		}
		last := i == len(comps)-1
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return fail(fmt.Errorf("%s is a symlink (--fix never follows one)", at))
		case unix.S_IFDIR:
			flags |= unix.O_DIRECTORY
		case unix.S_IFREG:
			if !last {
				return fail(fmt.Errorf("%s is not a directory", at))
			}
			flags |= unix.O_NONBLOCK | unix.O_NOCTTY
		default:
			return fail(fmt.Errorf("%s is neither a directory nor a regular file", at))
		}
		nfd, err := openRetry(func() (int, error) { return unix.Openat(parent, c, flags, 0) })
		if err != nil {
			return fail(fmt.Errorf("%s cannot be opened: %w", at, err))
		}
		n := node{path: at, fd: nfd}
		w = append(w, n)
		if err := unix.Fstat(nfd, &w[len(w)-1].st); err != nil {
			return fail(fmt.Errorf("%s: %w", at, err))
		}
		// The same object as the one whose kind was checked, or the path
		// changed in between.
		if got := w[len(w)-1].st; got.Dev != st.Dev || got.Ino != st.Ino {
			return fail(fmt.Errorf("%s changed while it was being opened", at))
		}
	}
	return w, nil
}

func openRetry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readACL is n's ACL of kind (posixacl.Access or posixacl.Default):
// decoded, or, when it has none, ok false. A file system that keeps no
// ACLs, or bytes that are not an ACL the kernel writes, are errors.
func readACL(fd int, kind string) (a posixacl.ACL, ok bool, err error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Fgetxattr(fd, kind, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ERANGE:
			size, serr := unix.Fgetxattr(fd, kind, nil)
			if serr != nil {
				return nil, false, serr
			}
			buf = make([]byte, size+64)
			continue
		case err == unix.ENODATA:
			return nil, false, nil
		case err == unix.EOPNOTSUPP:
			return nil, false, errors.New("its file system keeps no POSIX ACLs")
		case err != nil:
			return nil, false, err
		}
		a, err := posixacl.Decode(buf[:n])
		if err != nil {
			return nil, false, fmt.Errorf("its %s is not an ACL this command can read: %w", kind, err)
		}
		return a, true, nil
	}
}

// accessACL is n's access ACL, or the one its mode stands for.
func accessACL(n node) (posixacl.ACL, error) {
	a, ok, err := readACL(n.fd, posixacl.Access)
	if err != nil || ok {
		return a, err
	}
	return posixacl.FromMode(n.st.Mode), nil
}
