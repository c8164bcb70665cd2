package toolkit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// readFile answers with the file's text, at most max bytes of it.
//
// Symlinks are followed, deliberately: the container holds only the grant's
// directory, mounted at its own path, so a link that leaves the directory
// (to ~/.ssh/id, say) points at nothing in here and the read fails.
func readFile(path string, max int64) Response {
	// O_NONBLOCK: opening a FIFO must not hang until a writer comes; for a
	// regular file it changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return failed(fmt.Sprintf("cannot read %s: %s", path, reason(err)))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return failed(fmt.Sprintf("cannot read %s: %s", path, reason(err)))
	}
	switch {
	case fi.IsDir():
		return failed(fmt.Sprintf("cannot read %s: it is a directory", path))
	case !fi.Mode().IsRegular():
		return failed(fmt.Sprintf("cannot read %s: not a regular file (%s)", path, fi.Mode().Type()))
	}
	c, err := readCapped(f, max)
	if err != nil {
		return failed(fmt.Sprintf("cannot read %s: %s", path, reason(err)))
	}
	text, note := c.text("file")
	return Response{Status: "result", Text: text, Tail: note}
}

// writeFile creates or replaces the file at path with content. It does not
// follow a symlink at path itself (O_NOFOLLOW), and does not create
// directories: the parent must exist inside the granted directory.
func writeFile(path, content string) Response {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return failed(fmt.Sprintf("cannot write %s: it is a symlink, and write_file does not follow one", path))
	}
	if err != nil {
		return failed(fmt.Sprintf("cannot write %s: %s", path, reason(err)))
	}
	_, werr := f.WriteString(content)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return failed(fmt.Sprintf("cannot write %s: %s", path, reason(err)))
	}
	return result(fmt.Sprintf("wrote %d bytes to %s", len(content), path))
}

// reason is an error's cause without the path, which the message already
// names ("no such file or directory", "permission denied").
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
