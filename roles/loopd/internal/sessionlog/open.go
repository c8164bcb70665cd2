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
	if errors.Is(err, syscall.EISDIR) {
		// O_WRONLY on a directory.
		return nil, fmt.Errorf("%s is not a regular file (a directory); %s", path, seeDamaged)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Only "no such name" goes back bare: the caller makes it "no log"
		// or "nothing listed". Anything else refuses, and says where to look.
		return nil, fmt.Errorf("%w; %s", err, seeDamaged)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s); %s", path, Kind(st.Mode()), seeDamaged)
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

// Kind names what a file that is not a regular file is, in words.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.Type().String()
}
