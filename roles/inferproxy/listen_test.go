package inferproxy

import (
	"io"
	"io/fs"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/unixsock"
)

// listenUnix is listen for a config that names only path.
func listenUnix(path string) (*unixsock.Listener, error) {
	cfg := &Config{}
	cfg.Listen.Socket = path
	return listen(cfg, log.New(io.Discard, "", 0))
}

// TestPeersSocketIsWired: with [peers] socket naming another user, this
// test's process (root) is refused on infer.sock: it reads EOF, and
// inferproxy logs the socket, the uid and the runbook entry.
func TestPeersSocketIsWired(t *testing.T) {
	_, url := fake(t, fakeOpts())
	cfg := &Config{}
	cfg.Upstream.URL = url
	cfg.Listen.Socket = filepath.Join(t.TempDir(), "run", "infer.sock")
	cfg.Limits.MaxRequestBytes = DefaultMaxRequestBytes
	cfg.Peers.Socket = &unixsock.Rule{User: "nobody"}
	if err := cfg.Peers.Socket.Resolve(); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, cfg, time.Second)
	c, err := net.Dial("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Fatalf("a refused peer read %q, %v; want EOF", b, err)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	want := "inferproxy: " + p.socket + ": refused a connection from uid 0 "
	if !strings.Contains(p.log.String(), want) || !strings.Contains(p.log.String(), "lets only user nobody (uid 65534) connect; see docs/runbook.md#peer-refused\n") {
		t.Fatalf("log %q lacks the refusal %q", p.log.String(), want)
	}
}

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
