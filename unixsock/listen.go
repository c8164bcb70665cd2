// Package unixsock makes the Unix sockets every role listens on, and checks
// who connects to them. File modes are the first wall (pre-M1 §4: each pair
// of roles has a directory only those two can enter); the peer's
// credentials, read with SO_PEERCRED on every accepted connection and
// compared with the [peers] rule of the role's config, are the second.
//
// Two layouts are served by one Listen. In development every role is one
// user: the socket's directory is made 0700 when missing and the socket is
// 0600 (M3a §6). Deployed, the directory H/run/<client>-<listener>/ already
// exists, owned by the listener's user with the pair's group and mode 02710
// (setgid, so the socket takes the pair's group; the client only needs to
// search it), and the client is another user: the socket must be 0660.
package unixsock

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// MaxPath is the longest path a Unix socket can bind: sockaddr_un's
// sun_path is 108 bytes with the terminating NUL.
const MaxPath = 107

// Listener is a listening Unix socket made by Listen. Its Accept returns
// only connections whose peer passes its rule; it removes its socket on
// Close if the file at the path is still the one it made.
type Listener struct {
	ln   *net.UnixListener
	path string
	fi   os.FileInfo // the socket file as made, to remove only our own
	peer *Rule
	log  func(string)
	once sync.Once
	err  error
}

// Listen makes a listening socket at path. If path's directory is missing,
// it is made 0700 (and its missing parents) and the socket is 0600. If it
// exists, it must be a directory owned by this process's effective user
// that neither its group nor others can write (else another user could
// swap the socket for their own); the socket is then 0660 when the
// directory's group may search it (the deployed layout) and 0600 otherwise.
//
// A socket left at path by a process that died is removed. A socket that
// something still answers on, or a file at path that is not a socket, is
// left alone and is an error.
//
// peer, when not nil, is the only client Accept lets through (it is
// resolved here if it was not already); each refusal is a line given to
// log (os.Stderr when log is nil). A nil peer lets through any client the
// file modes let in: development and the demo run as one user.
func Listen(path string, peer *Rule, log func(line string)) (*Listener, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if len(path) > MaxPath {
		return nil, fail("the path is %d bytes; a Unix socket path is at most %d", len(path), MaxPath)
	}
	if peer != nil && !peer.resolved {
		if err := peer.Resolve(); err != nil {
			return nil, fail("[peers]: %v", err)
		}
	}
	mode, err := prepareDir(filepath.Dir(path))
	if err != nil {
		return nil, fail("%v", err)
	}
	if err := removeStale(path); err != nil {
		return nil, fail("%v", err)
	}
	// Bind at a temporary name, set the mode, then rename into place, so
	// the socket is never reachable at path with a wider mode than its own
	// (and without changing the process-wide umask, which other goroutines
	// share). The temporary name is as long as path, so every path that
	// fits a socket address still works.
	tmp := tempName(path)
	if err := removeStale(tmp); err != nil {
		return nil, fail("%v", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fail("cannot listen: %v", err)
	}
	ln.SetUnlinkOnClose(false) // it is renamed; Close removes it by its final name
	if err := os.Chmod(tmp, mode); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fail("cannot set the socket's mode: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fail("cannot move the socket into place: %v", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		_ = ln.Close()
		return nil, fail("the socket vanished: %v", err)
	}
	if log == nil {
		log = func(line string) { fmt.Fprintln(os.Stderr, line) }
	}
	return &Listener{ln: ln, path: path, fi: fi, peer: peer, log: log}, nil
}

// prepareDir makes dir if it is missing, checks it if it exists, and
// returns the mode the socket in it gets.
func prepareDir(dir string) (os.FileMode, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return 0, fmt.Errorf("cannot create its directory: %v", err)
		}
		// MkdirAll's mode is filtered by the umask; make it exactly 0700.
		if err := os.Chmod(dir, 0o700); err != nil {
			return 0, fmt.Errorf("cannot set its directory's mode: %v", err)
		}
		return 0o600, nil
	case err != nil:
		return 0, fmt.Errorf("cannot use its directory: %v", err)
	case !fi.IsDir():
		return 0, fmt.Errorf("%s is not a directory", dir)
	}
	perm := fi.Mode().Perm()
	switch st, ok := fi.Sys().(*syscall.Stat_t); {
	case !ok:
		return 0, fmt.Errorf("cannot read the owner of its directory %s", dir)
	case int(st.Uid) != os.Geteuid():
		return 0, fmt.Errorf("its directory %s belongs to uid %d, not to this process's uid %d", dir, st.Uid, os.Geteuid())
	case perm&0o002 != 0:
		return 0, fmt.Errorf("its directory %s is writable by every user (mode %04o)", dir, octal(fi.Mode()))
	case perm&0o020 != 0:
		return 0, fmt.Errorf("its directory %s is writable by its group (mode %04o)", dir, octal(fi.Mode()))
	case perm&0o010 != 0:
		// Deployed: the client is in the directory's group.
		return 0o660, nil
	}
	return 0o600, nil
}

// octal is mode as chmod writes it, with the setuid, setgid and sticky bits.
func octal(mode os.FileMode) uint32 {
	out := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		out |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		out |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		out |= 0o1000
	}
	return out
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
		return fmt.Errorf("%s is in use: another process is listening on it (is the role already running?)", path)
	}
	// Only a refused connection shows nobody listens; anything else (no
	// permission, say) leaves the socket alone.
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s exists and cannot be checked: %v", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing the stale socket %s: %v", path, err)
	}
	return nil
}

// tempName is the name a socket is bound at before it is renamed to path:
// path with its last byte made "~" ("#" if it already is one), as long as
// path and in the same directory.
func tempName(path string) string {
	last := byte('~')
	if path[len(path)-1] == '~' {
		last = '#'
	}
	return path[:len(path)-1] + string(last)
}

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Addr is the socket's address, by its final path.
func (l *Listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Accept waits for the next connection whose peer passes the rule. A peer
// that does not is closed before any byte of it is read, its refusal is
// logged, and Accept waits on.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if l.peer == nil {
			return c, nil
		}
		if line, ok := l.peer.admit(l.path, c); !ok {
			_ = c.Close()
			l.log(line)
			continue
		}
		return c, nil
	}
}

// Close stops listening and removes the socket, if the file at its path is
// still the one Listen made. A second Close returns the first's result.
func (l *Listener) Close() error {
	l.once.Do(func() {
		// The socket goes first: a goroutine in Accept returns as soon as
		// the listener is closed, and whoever waits on it (a server's
		// Serve, a test) must find the path gone by then.
		if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.fi) {
			l.err = os.Remove(l.path)
		}
		if err := l.ln.Close(); l.err == nil {
			l.err = err
		}
	})
	return l.err
}
