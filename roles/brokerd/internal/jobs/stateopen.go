package jobs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// maxStateBytes bounds what is read of jobs.json: a record is under 300
// bytes, so this is tens of thousands of jobs; a larger file is damaged.
const maxStateBytes = 16 << 20

// readStateFile reads the state file as every brokerd state file is read
// (issue 29, class 1): without following a link, without blocking, and only
// if it is a regular file. Only "no such name" is fs.ErrNotExist: a
// dangling link is damage, not a fresh start, and a link to a valid file
// elsewhere is not read as this one. openState is replaced in tests to
// play a read error no real file gives a root test (EIO, EACCES, EMFILE).
func readStateFile(path string) ([]byte, error) {
	f, err := openState(path)
	if err == syscall.ELOOP {
		return nil, damage{fmt.Errorf("%s is a symbolic link, not the file brokerd writes", path)}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, damage{fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxStateBytes {
		return nil, damage{fmt.Errorf("%s is larger than %d bytes", path, maxStateBytes)}
	}
	return data, nil
}

var openState = func(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
