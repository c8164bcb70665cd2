package podman

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

func TestTools(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.OutputBytes = 1000 })
	read := hostDir(t, false, map[string]string{"a.md": "hello\n", "b.bin": "\x7fELF\x00\x01", "long.txt": strings.Repeat("é", 600)})
	out := hostDir(t, true, nil)
	scratch := hostDir(t, true, map[string]string{"in.txt": "one\ntwo\n"})
	grants := grantDir(t, map[string]string{
		"read.toml":  grant("read_file", `paths = ["`+read+`"]`),
		"write.toml": grant("write_file", `paths = ["`+out+`"]`),
		"shell.toml": grant("shell", `paths = ["`+scratch+`"]`),
	})
	if got := content(t, call(t, r, grants, "read_file", `{"path":"`+read+`/a.md"}`)); got != "hello\n" {
		t.Errorf("read_file: %q", got)
	}
	if got := content(t, call(t, r, grants, "read_file", `{"path":"`+read+`/b.bin"}`)); got != "binary file, 6 bytes, not shown" {
		t.Errorf("binary read_file: %q", got)
	}
	res := call(t, r, grants, "read_file", `{"path":"`+read+`/long.txt"}`)
	if got := content(t, res); got != strings.Repeat("é", 500) || !res.Response.(wire.ResultResponse).Truncated {
		t.Errorf("capped read_file: %d bytes, %+v", len(got), res.Response)
	}
	// The grant path is the argument itself, so the mount is that object,
	// and read_file mounts only a regular file there.
	if got := failure(t, call(t, r, grants, "read_file", `{"path":"`+read+`"}`)); got != "podman: refused to mount "+read+
		": it is not a regular file, and this tool mounts the file itself; see docs/runbook.md#mount-source-refused" {
		t.Errorf("directory: %q", got)
	}

	if got := content(t, call(t, r, grants, "write_file", `{"path":"`+out+`/new.txt","content":"written\n"}`)); got != "wrote 8 bytes to "+out+"/new.txt" {
		t.Errorf("write_file: %q", got)
	}
	b, err := os.ReadFile(filepath.Join(out, "new.txt"))
	var st syscall.Stat_t
	if err != nil || string(b) != "written\n" || syscall.Stat(filepath.Join(out, "new.txt"), &st) != nil || st.Uid != 65534 {
		t.Errorf("the written file: %q %v, owner %d", b, err, st.Uid)
	}

	res = call(t, r, grants, "shell", `{"command":"pwd; wc -l < in.txt; id -u; echo made > out.txt; exit 3","cwd":"`+scratch+`"}`)
	if got := content(t, res); got != scratch+"\n2\n65534\n[exit status 3]" {
		t.Errorf("shell: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(scratch, "out.txt")); string(b) != "made\n" {
		t.Errorf("shell's file: %q", b)
	}
	if leftover := leftovers(t, r); len(leftover) != 0 {
		t.Errorf("leftover containers: %v", leftover)
	}
}

// TestNoNetwork: a container without egress reaches neither the host (on
// loopback or on its own address) nor anything else, and has no interface
// but lo.
func TestNoNetwork(t *testing.T) {
	r := testRuntime(t, nil)
	var accepted atomic.Int32
	var targets []string
	var wg sync.WaitGroup
	defer wg.Wait() // after the listeners close (deferred below, so run first)
	for _, host := range []string{"127.0.0.1", hostAddress(t)} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		targets = append(targets, ln.Addr().String())
	}
	targets = append(targets, "1.1.1.1:443", "100.100.100.100:80", "[2606:4700:4700::1111]:443")
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", "")})
	var script strings.Builder
	for _, a := range targets {
		host, port, _ := net.SplitHostPort(a)
		script.WriteString("busybox nc -w 2 " + host + " " + port + " </dev/null && echo CONNECTED " + a + "; ")
	}
	script.WriteString("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
	args, _ := wire.Marshal(struct {
		Command string `json:"command"`
	}{script.String()})
	got := content(t, call(t, r, grants, "shell", string(args)))
	if strings.Contains(got, "CONNECTED") || accepted.Load() != 0 {
		t.Fatalf("a connection got out (%d accepted):\n%s", accepted.Load(), got)
	}
	if lines := strings.Split(strings.TrimSpace(got), "\n"); lines[len(lines)-1] != "lo" {
		t.Fatalf("interfaces other than lo:\n%s", got)
	}
	if strings.Count(got, "can't connect") != len(targets) {
		t.Errorf("expected every connect to fail:\n%s", got)
	}
}

// hostAddress is an address of this host other than loopback.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("this host has no address but loopback")
	return ""
}

// TestSymlinksOutOfTheGrantReadNothing: a link in the granted directory to
// a file outside it (a fake ~/.ssh/id) points at nothing in the container.
func TestSymlinksOutOfTheGrantReadNothing(t *testing.T) {
	r := testRuntime(t, nil)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, ".ssh", "id")
	if err := os.WriteFile(secret, []byte("SECRET KEY"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(home, "notes")
	if err := os.Mkdir(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"abs": secret, "rel": "../.ssh/id", "dir": filepath.Join(home, ".ssh")} {
		if err := os.Symlink(target, filepath.Join(notes, name)); err != nil {
			t.Fatal(err)
		}
	}
	grants := grantDir(t, map[string]string{
		"read.toml":  grant("read_file", `paths = ["`+notes+`"]`),
		"shell.toml": grant("shell", `paths = ["`+notes+`"]`),
	})
	for _, p := range []string{"abs", "rel", "dir/id"} {
		msg := failure(t, call(t, r, grants, "read_file", `{"path":"`+notes+`/`+p+`"}`))
		if !strings.HasSuffix(msg, "no such file or directory") {
			t.Errorf("%s: %q", p, msg)
		}
	}
	got := content(t, call(t, r, grants, "shell", `{"command":"cat abs rel dir/id; ls -la `+home+`","cwd":"`+notes+`"}`))
	if strings.Contains(got, "SECRET") || strings.Contains(got, ".ssh") {
		t.Fatalf("the secret or its directory showed:\n%s", got)
	}
}

// TestWritesStayInTheMount: write_file refuses a symlink at its path, a
// link to a directory outside leads nowhere, shell cannot write the
// image, and "..", refused by policy, never reaches the runtime.
func TestWritesStayInTheMount(t *testing.T) {
	r := testRuntime(t, nil)
	outside := t.TempDir()
	target := filepath.Join(outside, "target.txt")
	if err := os.WriteFile(target, []byte("keep"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0o777); err != nil {
		t.Fatal(err)
	}
	out := hostDir(t, true, nil)
	for name, to := range map[string]string{"link.txt": target, "outdir": outside} {
		if err := os.Symlink(to, filepath.Join(out, name)); err != nil {
			t.Fatal(err)
		}
	}
	grants := grantDir(t, map[string]string{
		"write.toml": grant("write_file", `paths = ["`+out+`"]`),
		"shell.toml": grant("shell", `paths = ["`+out+`"]`),
	})
	if msg := failure(t, call(t, r, grants, "write_file", `{"path":"`+out+`/link.txt","content":"x"}`)); !strings.Contains(msg, "symlink") {
		t.Errorf("through a symlink: %q", msg)
	}
	if msg := failure(t, call(t, r, grants, "write_file", `{"path":"`+out+`/outdir/new.txt","content":"x"}`)); !strings.HasSuffix(msg, "no such file or directory") {
		t.Errorf("through a linked directory: %q", msg)
	}
	got := content(t, call(t, r, grants, "shell", `{"command":"echo x > /etc/passwd; echo x > /bin/x; echo x > `+outside+`/new.txt; echo x > `+target+`; echo done","cwd":"`+out+`"}`))
	if strings.Count(got, "Read-only file system") != 2 || strings.Count(got, "nonexistent directory") != 2 || !strings.HasSuffix(got, "done\n") {
		t.Errorf("shell writes:\n%s", got)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the file outside was changed: %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("something was written outside: %v", entries)
	}

	counting := &countingRuntime{rt: r}
	sid, _ := wire.NewSessionID("s-1")
	d := policy.Decide(grants, wire.ToolRequest{Session: sid, Call: 2, Tool: "write_file",
		Arguments: `{"path":"` + out + `/../escape.txt","content":"x"}`}, policy.State{Taint: wire.Private}, wire.Now())
	if _, err := runner.Run(context.Background(), d, counting); !errors.Is(err, runner.ErrNotAllowed) || d.Reason() != wire.InvalidArguments {
		t.Errorf("..: %v, %v", err, d.Outcome())
	}
	if counting.n.Load() != 0 {
		t.Error("a path with .. reached the runtime")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "escape.txt")); err == nil {
		t.Error("escape.txt was written")
	}
}

type countingRuntime struct {
	rt runner.Runtime
	n  atomic.Int32
}

func (c *countingRuntime) Run(ctx context.Context, s *runner.RunSpec) (runner.Output, error) {
	c.n.Add(1)
	return c.rt.Run(ctx, s)
}

// TestRefusesForeignSpecs: the zero RunSpec, the only one code outside
// the runner can write, is refused before Podman is asked.
func TestRefusesForeignSpecs(t *testing.T) {
	r := testRuntime(t, nil)
	_, err := r.Run(context.Background(), &runner.RunSpec{})
	var re *runner.Error
	if !errors.As(err, &re) || !strings.Contains(re.Message, "refused a RunSpec") {
		t.Fatalf("%v", err)
	}
}

func TestCleanupLeftovers(t *testing.T) {
	r := testRuntime(t, nil)
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// What a brokerd killed mid-call leaves: one container created and not
	// started, one running.
	for i, start := range []bool{false, true} {
		sg := specFor(r.cfg, r.containerFor("shell"))
		sg.Stdin = nil
		sg.Entrypoint = []string{"/bin/sleep", "60"}
		created, err := containers.CreateWithSpec(conn, sg, nil)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if start {
			if err := containers.Start(conn, created.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := r.CleanupLeftovers(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("removed %d: %v", n, err)
	}
	if ids := leftovers(t, r); len(ids) != 0 {
		t.Fatalf("left: %v", ids)
	}
	if n, err := r.CleanupLeftovers(context.Background()); n != 0 || err != nil {
		t.Fatalf("a second cleanup: %d %v", n, err)
	}
}

// elapsed runs f and says how long it took.
func elapsed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
