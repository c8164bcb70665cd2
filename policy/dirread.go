package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// The grants directory is read with plain system calls. os.ReadDir and
// os.OpenFile offer each descriptor to Go's poller (a failed epoll_ctl per
// file), stat and wrap more than a decision needs, and look each file's
// path up again from the root; at every call of brokerd that was a tenth of
// a denied call's time. Errors keep os's form ("open PATH: reason").

// openDir opens dir for listing, and for opening its files relative to it.
func openDir(dir string) (int, error) {
	fd, err := retry(func() (int, error) {
		return syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// listDir returns the names in the open directory fd, in the order the
// file system gives them; buf is scratch space for the entries.
func listDir(fd int, dir string, buf []byte) ([]string, error) {
	var names []string
	for {
		n, err := retry(func() (int, error) { return syscall.ReadDirent(fd, buf) })
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

// readAt reads the file name in the open directory dirfd into scratch
// (grown as needed) and returns its bytes, which alias scratch. It opens
// without blocking and refuses anything but a regular file, so a FIFO or
// device named *.toml cannot stall every decision, and it stops once the
// file is larger than MaxGrantFileBytes. It does not follow a symbolic
// link (issue 29, class 1): a link may lead to a file someone other than
// the directory's owner can write, and a dangling one would drop a grant
// without a word; either way the set is invalid.
func readAt(dirfd int, dir, name string, scratch []byte) ([]byte, error) {
	path := func() string { return filepath.Join(dir, name) }
	fd, err := retry(func() (int, error) {
		return syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY|syscall.O_NOFOLLOW, 0)
	})
	if err == syscall.ELOOP {
		return nil, errLink
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path(), Err: err}
	}
	defer closeFD(fd)
	var st syscall.Stat_t
	if _, err := retry(func() (int, error) { return 0, syscall.Fstat(fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path(), Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	// One byte more than the size, so that a single read both fills the
	// file and shows its end; a file that grew meanwhile is read on.
	size := int(min(max(st.Size, 0), MaxGrantFileBytes))
	if cap(scratch) < size+1 {
		scratch = make([]byte, size+1)
	}
	buf := scratch[:cap(scratch)]
	n := 0
	for {
		k, err := retry(func() (int, error) { return syscall.Read(fd, buf[n:]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path(), Err: err}
		}
		if k == 0 {
			break
		}
		n += k
		if n > MaxGrantFileBytes {
			return nil, fmt.Errorf("larger than %d bytes", MaxGrantFileBytes)
		}
		if n == size && int64(n) == st.Size {
			// All that fstat said the file holds: a regular file read
			// whole. Anything else (a file that grew, or one of size 0
			// that has bytes, as in /proc) is read on until a read
			// returns nothing.
			break
		}
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
	return buf[:n], nil
}

var errLink = errors.New("it is a symbolic link; a grant is read only from a regular file in the grants directory itself")

// retry runs a system call again while a signal interrupts it.
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// closeFD closes a descriptor that was only read: nothing it could report
// changes what was read.
func closeFD(fd int) { _ = syscall.Close(fd) }
