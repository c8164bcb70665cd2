package audit

import (
	"io"
	"io/fs"
	"os"
	"syscall"
)

// File is what the writer needs of an open log file or directory. Tests
// substitute one that fails on demand or counts syncs (Options.OpenFile).
type File interface {
	io.Writer
	Sync() error
	Close() error
}

func osOpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil || flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return f, err // a directory, opened only to be synced: fsync
	}
	return logFile{f}, nil
}

// logFile is a log file open for appending. Its Sync is fdatasync, which
// makes the bytes written and the file's new size durable: everything a
// reader of the log needs. It leaves out the modification time, which no
// one reads, and on ext4 here that makes a record's sync about a tenth
// cheaper (docs/decisions.md).
type logFile struct{ *os.File }

func (f logFile) Sync() error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = syscall.Fdatasync(int(fd)); serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &fs.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// syncDir makes a directory entry (a file just created) durable.
func syncDir(open func(string, int, fs.FileMode) (File, error), dir string) error {
	d, err := open(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
