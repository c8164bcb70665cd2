package audit

import (
	"io"
	"io/fs"
	"os"
)

// File is what the writer needs of an open log file or directory. Tests
// substitute one that fails on demand or counts syncs (Options.OpenFile).
type File interface {
	io.Writer
	Sync() error
	Close() error
}

func osOpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
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
