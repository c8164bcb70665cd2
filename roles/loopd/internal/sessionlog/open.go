package sessionlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"boxmaker/runbook"
)

// A session's log and its side files (.sent, .torn) are loopd's own files,
// so they are opened without following a symbolic link and used only as
// regular files (issue 29, class 1). Only "no such name" is
// fs.ErrNotExist: a dangling link is not a session that never was, a link
// elsewhere is not this session's log, a FIFO must not stall loopd, and an
// append must not land in the file a planted link names.

var seeDamaged = runbook.See("session-log-damaged")

// noFollow is added to every open of these files.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// openOwn opens path with flag (and noFollow), then checks it is a regular
// file. The error names the path and says why.
func openOwn(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, not a file loopd writes; %s", path, seeDamaged)
	}
	if errors.Is(err, syscall.ENXIO) {
		// O_WRONLY|O_NONBLOCK on a FIFO with no reader.
		return nil, fmt.Errorf("%s is not a regular file; %s", path, seeDamaged)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s); %s", path, st.Mode().Type(), seeDamaged)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readOwn reads the whole of path, opened by openOwn.
func readOwn(path string) ([]byte, error) {
	f, err := openOwn(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
