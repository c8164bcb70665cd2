package inferproxy

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSocketAndDirectoryModes(t *testing.T) {
	_, url := fake(t, fakeOpts())
	p := startProxy(t, url, DefaultMaxRequestBytes, time.Second)
	dir, err := os.Stat(filepath.Dir(p.socket))
	if err != nil {
		t.Fatal(err)
	}
	if dir.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %04o, want 0700", dir.Mode().Perm())
	}
	sock, err := os.Lstat(p.socket)
	if err != nil {
		t.Fatal(err)
	}
	if sock.Mode().Type() != fs.ModeSocket || sock.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a socket with 0600", sock.Mode())
	}
	if _, err := os.Lstat(p.socket + "~"); err == nil {
		t.Fatal("the temporary socket name is left behind")
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p.socket); err == nil {
		t.Fatal("the socket is left behind after a stop")
	}
}

func TestExistingDirectoryKeepsItsMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	s, err := listenUnix(filepath.Join(dir, "infer.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o750 {
		t.Fatalf("an existing directory's mode changed to %04o", fi.Mode().Perm())
	}
}

func TestStaleSocketIsReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "infer.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // as a killed process leaves it
	s, err := listenUnix(path)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	s.Close()
}

func TestSocketRefusals(t *testing.T) {
	base := t.TempDir()
	live := filepath.Join(base, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	file := filepath.Join(base, "file.sock")
	if err := os.WriteFile(file, []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o1777); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(file, "infer.sock")
	for path, want := range map[string]string{
		live:                              "another process is listening",
		file:                              "exists and is not a socket; it is left alone",
		filepath.Join(open, "infer.sock"): "is writable by every user",
		notDir:                            "is not a directory",
	} {
		s, err := listenUnix(path)
		if err == nil {
			s.Close()
			t.Errorf("%s: listening", path)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "\nsee docs/runbook.md#inferproxy-socket-unavailable") {
			t.Errorf("%s: %v", path, err)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "not a socket" {
		t.Fatal("a file that is not a socket was touched")
	}
}
