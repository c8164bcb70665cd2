package inferproxy

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"boxmaker/runbook"
)

// socket is infer.sock, listening.
type socket struct {
	*net.UnixListener
	path string
	fi   os.FileInfo // the socket file as created, to remove only our own
}

// listenUnix listens on path with mode 0600, creating its directory with
// mode 0700 if it is missing and removing a stale socket left by a process
// that died. Another process listening there is an error, as is anything
// at path that is not a socket: only sockets are ever removed.
func listenUnix(path string) (*socket, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s\n%s", path, fmt.Sprintf(format, args...), runbook.See("inferproxy-socket-unavailable"))
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fail("cannot create its directory: %v", err)
		}
		// MkdirAll's mode is filtered by the umask; make it exactly 0700.
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fail("cannot set its directory's mode: %v", err)
		}
	case err != nil:
		return nil, fail("cannot use its directory: %v", err)
	case !fi.IsDir():
		return nil, fail("%s is not a directory", dir)
	case fi.Mode().Perm()&0o002 != 0:
		// Anyone could replace the socket there with their own.
		return nil, fail("its directory %s is writable by every user (mode %04o)", dir, fi.Mode().Perm())
	}
	if err := removeStale(path); err != nil {
		return nil, fail("%v", err)
	}
	// Bind at a temporary name, set the mode, then rename into place, so
	// the socket is never reachable at path with a wider mode than 0600
	// (and without changing the process-wide umask).
	tmp := path + "~"
	if err := removeStale(tmp); err != nil {
		return nil, fail("%v", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fail("cannot listen: %v", err)
	}
	ln.SetUnlinkOnClose(false) // it is renamed; Close removes it by its final name
	if err := os.Chmod(tmp, 0o600); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fail("cannot set the socket's mode: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fail("cannot move the socket into place: %v", err)
	}
	s := &socket{UnixListener: ln, path: path}
	s.fi, err = os.Lstat(path)
	if err != nil {
		_ = ln.Close()
		return nil, fail("the socket vanished: %v", err)
	}
	return s, nil
}

// removeStale removes a socket at path that nobody listens on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; it is left alone", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("another process is listening on %s (is inferproxy already running?)", path)
	}
	return os.Remove(path)
}

// Close stops listening and removes the socket, if it is still ours.
func (s *socket) Close() error {
	err := s.UnixListener.Close()
	if fi, statErr := os.Lstat(s.path); statErr == nil && os.SameFile(fi, s.fi) {
		if rmErr := os.Remove(s.path); err == nil {
			err = rmErr
		}
	}
	return err
}
