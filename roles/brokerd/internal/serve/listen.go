package serve

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// listen makes the socket at path (M3a §6): its directory is created 0700
// if missing (an existing one keeps its mode: deployment may share it with
// the client's group), a stale socket left by a crash is removed, and the
// socket is 0600. A socket that something still answers on, or a path that
// is not a socket, is left alone and is an error.
func listen(name, path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s: %s exists and is not a socket; not removing it", name, path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %s is in use: is another brokerd running?", name, path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%s: %s exists and cannot be checked: %w", name, path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("%s: removing the stale socket: %w", name, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ln, nil
}
