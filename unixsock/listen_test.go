package unixsock

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestListenDirectoryRules: what Listen does with the socket's directory
// and with what is already at the socket's path. Each case builds its
// directory under a fresh temporary one.
func TestListenDirectoryRules(t *testing.T) {
	type setup func(t *testing.T, dir string) string // returns the socket path
	inDir := func(mode os.FileMode) setup {
		return func(t *testing.T, dir string) string {
			run := filepath.Join(dir, "run")
			mkdir(t, run, mode)
			return filepath.Join(run, "s.sock")
		}
	}
	cases := []struct {
		name     string
		setup    setup
		wantErr  string      // "" for success
		sockMode os.FileMode // on success
		dirMode  os.FileMode // the directory's mode afterwards
	}{
		{"missing directory is made 0700", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "a", "run", "s.sock")
		}, "", 0o600, 0o700},
		{"private directory", inDir(0o700), "", 0o600, 0o700},
		{"deployed directory 02710", inDir(0o2710), "", 0o660, 0o2710},
		{"group may list and search", inDir(0o750), "", 0o660, 0o750},
		{"others may search, group may not", inDir(0o701), "", 0o600, 0o701},
		{"group-writable directory", inDir(0o770), "is writable by its group (mode 0770)", 0, 0o770},
		{"world-writable sticky directory", inDir(0o1777), "is writable by every user (mode 1777)", 0, 0o1777},
		{"directory of another user", func(t *testing.T, dir string) string {
			run := filepath.Join(dir, "run")
			mkdir(t, run, 0o2710)
			if err := os.Chown(run, 65534, 65534); err != nil {
				t.Fatalf("chown (these tests run as root): %v", err)
			}
			return filepath.Join(run, "s.sock")
		}, "belongs to uid 65534, not to this process's uid 0", 0, 0o2710},
		{"directory is a file", func(t *testing.T, dir string) string {
			f := filepath.Join(dir, "run")
			writeFile(t, f, "x")
			return filepath.Join(f, "s.sock")
		}, "is not a directory", 0, 0},
		{"regular file at the path", func(t *testing.T, dir string) string {
			p := inDir(0o700)(t, dir)
			writeFile(t, p, "not a socket")
			return p
		}, "exists and is not a socket; it is left alone", 0, 0o700},
		{"regular file at the temporary name", func(t *testing.T, dir string) string {
			p := inDir(0o700)(t, dir)
			writeFile(t, tempName(p), "not a socket")
			return p
		}, "exists and is not a socket; it is left alone", 0, 0o700},
		{"stale socket is replaced", func(t *testing.T, dir string) string {
			p := inDir(0o2710)(t, dir)
			staleSocket(t, p)
			return p
		}, "", 0o660, 0o2710},
		{"stale socket at the temporary name is replaced", func(t *testing.T, dir string) string {
			p := inDir(0o700)(t, dir)
			staleSocket(t, tempName(p))
			return p
		}, "", 0o600, 0o700},
		{"live socket is left alone", func(t *testing.T, dir string) string {
			p := inDir(0o700)(t, dir)
			ln, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return p
		}, "is in use: another process is listening on it", 0, 0o700},
		{"path too long", func(t *testing.T, dir string) string {
			return filepath.Join(dir, strings.Repeat("p", MaxPath))
		}, "a Unix socket path is at most 107", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := shortTempDir(t)
			path := c.setup(t, dir)
			before, _ := os.ReadFile(path)
			ln, err := Listen(path, nil, nil)
			if c.wantErr != "" {
				if err == nil {
					ln.Close()
					t.Fatalf("listening, want an error with %q", c.wantErr)
				}
				if !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %q, want %q after the path", err, c.wantErr)
				}
				if after, _ := os.ReadFile(path); string(after) != string(before) {
					t.Fatalf("what was at the path changed from %q to %q", before, after)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				fi, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != c.sockMode {
					t.Errorf("socket %v, want a socket with %04o", fi.Mode(), c.sockMode)
				}
				if _, err := os.Lstat(tempName(path)); err == nil {
					t.Error("the temporary name is left behind")
				}
				conn, err := net.Dial("unix", path)
				if err != nil {
					t.Fatalf("dialling the new socket: %v", err)
				}
				conn.Close()
				if err := ln.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Lstat(path); err == nil {
					t.Error("the socket is left behind after Close")
				}
			}
			if c.dirMode != 0 {
				if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky) != withSpecial(c.dirMode) {
					t.Errorf("directory mode %v (%v), want %04o", fi.Mode(), err, c.dirMode)
				}
			}
		})
	}
}

// TestDeployedSocketTakesTheDirectorysGroup: in a setgid directory of
// another group, the socket is made in that group, so the group's members
// (the client) can connect through the 0660 mode.
func TestDeployedSocketTakesTheDirectorysGroup(t *testing.T) {
	run := filepath.Join(shortTempDir(t), "run")
	mkdir(t, run, 0o2710)
	if err := os.Chown(run, 0, 65534); err != nil {
		t.Fatalf("chown (these tests run as root): %v", err)
	}
	ln, err := Listen(filepath.Join(run, "s.sock"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Lstat(ln.Path())
	if err != nil {
		t.Fatal(err)
	}
	if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != 65534 || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket gid %d mode %04o, want gid 65534 mode 0660", gid, fi.Mode().Perm())
	}
}

// TestCloseLeavesAReplacedSocket: Close removes only the socket it made; a
// socket another process made at the path since is left.
func TestCloseLeavesAReplacedSocket(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "s.sock")
	ln, err := Listen(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	other, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("Close removed another listener's socket: %v", err)
	}
	if ln.Addr().String() != path {
		t.Fatalf("Addr %q, want %q", ln.Addr(), path)
	}
}

func TestTempName(t *testing.T) {
	for path, want := range map[string]string{
		"/r/broker.sock": "/r/broker.soc~",
		"/r/a~":          "/r/a#",
		"/r/x":           "/r/~",
	} {
		if got := tempName(path); got != want || len(got) != len(path) {
			t.Errorf("tempName(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestLongestPathListens: a path of MaxPath bytes binds (the temporary
// name is no longer than the path).
func TestLongestPathListens(t *testing.T) {
	dir := shortTempDir(t)
	path := filepath.Join(dir, strings.Repeat("p", MaxPath-len(dir)-1))
	if len(path) != MaxPath {
		t.Fatalf("path is %d bytes", len(path))
	}
	ln, err := Listen(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// shortTempDir is a new directory under /tmp with a short name (socket
// paths are at most 107 bytes; t.TempDir's names are long), removed after.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bxs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, withSpecial(mode)); err != nil {
		t.Fatal(err)
	}
}

// withSpecial turns the octal setgid and sticky bits of mode into Go's.
func withSpecial(mode os.FileMode) os.FileMode {
	out := mode & fs.ModePerm
	if mode&0o2000 != 0 {
		out |= fs.ModeSetgid
	}
	if mode&0o1000 != 0 {
		out |= fs.ModeSticky
	}
	return out
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// staleSocket leaves a socket at path that nobody listens on, as a killed
// process leaves it.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

// TestCloseRemovesBeforeAcceptReturns: a server whose Serve returns when
// Accept fails must find its socket gone by then (loopd's test of its two
// sockets once found one still there).
func TestCloseRemovesBeforeAcceptReturns(t *testing.T) {
	dir := t.TempDir()
	for round := range 200 {
		path := filepath.Join(dir, "s.sock")
		ln, err := Listen(path, nil, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		gone := make(chan error, 1)
		go func() {
			_, err := ln.Accept()
			if err == nil {
				gone <- errors.New("Accept returned a connection")
				return
			}
			_, err = os.Lstat(path)
			gone <- err
		}()
		ln.Close()
		if err := <-gone; !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: when Accept returned, the socket was still there (%v)", round, err)
		}
	}
}
