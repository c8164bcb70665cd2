// Package ownfile reads the files brokerd writes for itself (session
// state, the taint floor, job bindings, jobs.json, the notes index, the
// Podman instance id) the one way such a file is read (issue 29, class 1):
// without following a symbolic link, without blocking, and only if it is a
// regular file of at most a given size.
//
// Only "no such name" is fs.ErrNotExist. A dangling link is not a missing
// file (which most callers read as a fresh start), a link to some other
// file is not read as this one, and a FIFO or device is refused by fstat
// before any read could block or mislead. Those refusals, and a file over
// the size, match ErrNotOwn; any other error is the system's (EIO,
// EACCES, EMFILE), which a caller must not take for damage.
package ownfile

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// ErrNotOwn marks a name that holds something other than the file brokerd
// writes there: a link, a directory, a FIFO, a device, or a file too large.
var ErrNotOwn = errors.New("not the file brokerd writes")

type notOwn struct{ error }

func (e notOwn) Unwrap() []error { return []error{e.error, ErrNotOwn} }

// Read returns the bytes of the regular file at path, refusing one larger
// than limit bytes. It uses plain system calls: the session state is read at
// every call, and most sessions have none, so the common case is one
// failed open, without os.ReadFile's poller registration and wrapping.
func Read(path string, limit int) ([]byte, error) {
	fd, err := retry(func() (int, error) {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	})
	if err == syscall.ELOOP {
		return nil, notOwn{fmt.Errorf("%s is a symbolic link, not the file brokerd writes", path)}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, notOwn{fmt.Errorf("%s is not a regular file (%s)", path, kind(st.Mode))}
	}
	// One byte more than the size fstat gave (and than limit), so that the
	// read that fills it also shows the end.
	buf := make([]byte, min(max(st.Size, 0), int64(limit))+1)
	n := 0
	for {
		k, err := retry(func() (int, error) { return syscall.Read(fd, buf[n:]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			return buf[:n], nil
		}
		n += k
		if n > limit {
			return nil, notOwn{fmt.Errorf("%s: larger than %d bytes", path, limit)}
		}
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

func kind(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFIFO:
		return "a FIFO"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "a device"
	case syscall.S_IFSOCK:
		return "a socket"
	}
	return fmt.Sprintf("mode %#o", mode&syscall.S_IFMT)
}

// retry runs a system call again while a signal interrupts it.
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != syscall.EINTR {
			return n, err
		}
	}
}
