package unixsock

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/internal/syncbuf"
)

// dialEnv, when set, makes the test binary a client instead: it connects
// to the socket named, reads what it is sent, and prints it (or "EOF").
const dialEnv = "UNIXSOCK_TEST_DIAL"

func TestMain(m *testing.M) {
	if path := os.Getenv(dialEnv); path != "" {
		os.Exit(dial(path))
	}
	os.Exit(m.Run())
}

// dial is the child's side: connect, send nothing, read until the end.
func dial(path string) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Printf("dial: %v\n", err)
		return 1
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	switch {
	case err != nil:
		fmt.Printf("read: %v\n", err)
		return 1
	case len(b) == 0:
		fmt.Print("EOF")
	default:
		fmt.Printf("%s", b)
	}
	return 0
}

// TestPeersAreChecked runs clients as other users against listeners with
// each kind of rule. The users and groups are made here with a prefix of
// this test's own and removed after. Every client gets through the file
// modes (the socket's group is one they all hold), so what lets them in
// or not is the peer check alone.
func TestPeersAreChecked(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		name string
		rule Rule
		peer syscall.Credential // Groups get the pair group added
		root bool               // the client is this test process, as root
		want bool
	}{
		{"user rule, that user", Rule{User: w.a}, w.cred(w.a, w.a), false, true},
		{"user rule, another user", Rule{User: w.a}, w.cred("nobody", "nogroup"), false, false},
		{"user rule, that user's group but not the user", Rule{User: w.a}, w.cred("nobody", w.a), false, false},
		{"user rule, root", Rule{User: w.a}, syscall.Credential{}, true, false},
		{"group rule, a supplementary member", Rule{Group: w.g}, w.cred(w.a, w.a), false, true},
		{"group rule, a member by primary group, running with another gid", Rule{Group: w.g}, w.cred(w.b, "nogroup"), false, true},
		{"group rule, a process running with the group's gid", Rule{Group: w.g}, w.cred("nobody", w.g), false, true},
		{"group rule, not a member", Rule{Group: w.g}, w.cred("nobody", "nogroup"), false, false},
		{"group rule, root", Rule{Group: w.g}, syscall.Credential{}, true, false},
		{"no rule, anyone", Rule{}, w.cred("nobody", "nogroup"), false, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(w.run, fmt.Sprintf("s%d.sock", i))
			var rule *Rule
			if c.rule != (Rule{}) {
				rule = &c.rule
			}
			var log syncbuf.Buffer
			ln, err := Listen(path, rule, func(line string) { fmt.Fprintln(&log, line) })
			if err != nil {
				t.Fatal(err)
			}
			stop := serveHello(ln)
			defer stop()

			var got string
			var pid, uid int
			if c.root {
				got, pid, uid = dial0(t, path), os.Getpid(), 0
			} else {
				got, pid = w.dialAs(t, path, c.peer)
				uid = int(c.peer.Uid)
			}
			if c.want {
				if got != "hello\n" {
					t.Fatalf("allowed peer read %q, want hello", got)
				}
				if log.String() != "" {
					t.Fatalf("allowed peer logged %q", log.String())
				}
				return
			}
			if got != "EOF" {
				t.Fatalf("refused peer read %q, want EOF", got)
			}
			stop() // the refusal is logged before the next Accept returns
			line := strings.TrimSuffix(log.String(), "\n")
			for _, want := range []string{path + ": refused a connection from uid " + strconv.Itoa(uid) + " ",
				"pid " + strconv.Itoa(pid) + ")", "[peers] lets only " + rule.String() + " connect"} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %q lacks %q", line, want)
				}
			}
			if strings.Count(line, "\n") != 0 || !strings.HasSuffix(line, "; see docs/runbook.md#peer-refused") {
				t.Errorf("log %q is not one line ending with the runbook pointer", line)
			}
		})
	}
}

// serveHello answers every connection Accept returns with "hello\n". stop
// closes the listener and waits for the accepting goroutine; it may be
// called more than once.
func serveHello(ln *Listener) (stop func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			c.Close()
		}
	})
	return func() {
		ln.Close()
		wg.Wait()
	}
}

// dial0 connects as this process and reads everything.
func dial0(t *testing.T, path string) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return "EOF"
	}
	return string(b)
}

// world is the users, groups and directory TestPeersAreChecked runs in:
// user a (supplementary member of group g), user b (primary group g), a
// pair group p that every client holds, and a directory run/ owned by this
// process, in group p, mode 02710, as `deploy apply` makes one.
type world struct {
	a, b, g, p string
	run        string
	bin        string // a copy of the test binary that the clients can run
}

func newWorld(t *testing.T) *world {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test makes users and runs clients as them: it must run as root")
	}
	pre := fmt.Sprintf("bxp%d", os.Getpid())
	w := &world{a: pre + "a", b: pre + "b", g: pre + "g", p: pre + "p"}
	run := func(args ...string) {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// Cleanup runs in reverse order: users first, then the groups.
	for _, g := range []string{w.g, w.p} {
		run("groupadd", g)
		t.Cleanup(func() { _ = exec.Command("groupdel", g).Run() })
	}
	run("useradd", "-M", "-U", "-G", w.g, "-s", "/usr/sbin/nologin", w.a)
	t.Cleanup(func() {
		_ = exec.Command("userdel", w.a).Run()
		_ = exec.Command("groupdel", w.a).Run() // if userdel left it
	})
	run("useradd", "-M", "-N", "-g", w.g, "-s", "/usr/sbin/nologin", w.b)
	t.Cleanup(func() { _ = exec.Command("userdel", w.b).Run() })

	base := shortTempDir(t)
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	w.run = filepath.Join(base, "run")
	mkdir(t, w.run, 0o2710)
	if err := os.Chown(w.run, 0, int(w.gid(t, w.p))); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	w.bin = filepath.Join(base, "client")
	if err := os.WriteFile(w.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) gid(t *testing.T, name string) uint32 {
	t.Helper()
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	return atou(t, g.Gid)
}

// cred is a client running as user name with gid group's, holding the
// pair group besides.
func (w *world) cred(name, group string) syscall.Credential {
	u, err := user.Lookup(name)
	if err != nil {
		panic(err) // the users are made before the cases are built
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	g, err := user.LookupGroup(group)
	if err != nil {
		panic(err)
	}
	gid, _ := strconv.ParseUint(g.Gid, 10, 32)
	p, err := user.LookupGroup(w.p)
	if err != nil {
		panic(err)
	}
	pgid, _ := strconv.ParseUint(p.Gid, 10, 32)
	return syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(pgid)}}
}

// dialAs runs the client as cred and returns what it read, and its pid.
func (w *world) dialAs(t *testing.T, path string, cred syscall.Credential) (string, int) {
	t.Helper()
	cmd := exec.Command(w.bin)
	cmd.Dir = filepath.Dir(w.bin)
	// GORACE: a race-built client would otherwise wait a second at exit.
	cmd.Env = []string{dialEnv + "=" + path, "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &cred}
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("client as uid %d gid %d: %v: %s%s", cred.Uid, cred.Gid, err, out.String(), errs.String())
	}
	return out.String(), cmd.Process.Pid
}
