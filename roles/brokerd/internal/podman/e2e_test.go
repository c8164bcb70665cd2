package podman_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/internal/syncbuf"
	brokerdrole "boxmaker/roles/brokerd"
	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/podman"
	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/roles/brokerd/internal/serve"
	"boxmaker/wire"
)

// brokerd is brokerd serving broker.sock with the Podman runtime, started
// the way brokerd serve starts: the runtime's checks, the leftover
// cleanup, then the sockets.
type brokerd struct {
	home, grants, secrets, socket string
	podman                        string // the Podman service's socket URL
	srv                           *serve.Server
	rt                            *podman.Runtime
	log                           *syncbuf.Buffer // everything brokerd logged
}

func startBrokerd(t testing.TB, opts ...func(*serve.Options)) *brokerd {
	t.Helper()
	// Its own service: the cleanup below removes every container with
	// brokerd's label on the service it is given.
	socket := podmantest.PrivateSocket(t)
	pc := podman.DefaultConfig()
	pc.Socket, pc.Image, pc.TimeoutMS = socket, podmantest.Image(t, socket), 10_000
	log := &syncbuf.Buffer{}
	rt, err := podman.New(context.Background(), pc, io.MultiWriter(os.Stderr, log), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CleanupLeftovers(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "bxe") // short: socket paths are at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := &brokerd{home: filepath.Join(dir, "home"), grants: filepath.Join(dir, "grants"), secrets: filepath.Join(dir, "secrets"), rt: rt, log: log, podman: socket}
	cfg, err := config.Parse("brokerd.toml", []byte(fmt.Sprintf("[paths]\nhome = %q\ngrants = %q\nsecrets = %q\n", b.home, b.grants, b.secrets)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{b.grants, b.secrets} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	b.socket = cfg.Sockets.Broker
	o := serve.Options{Config: cfg, Runtime: rt, Stderr: io.MultiWriter(testWriter{t}, b.log)}
	for _, opt := range opts {
		opt(&o)
	}
	if b.srv, err = serve.Start(o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.srv.Stop(); err != nil {
			t.Error(err)
		}
		rt.Close()
	})
	return b
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Logf("%s", p); return len(p), nil }

// call sends one tool request on broker.sock and returns the final answer.
func (b *brokerd) call(t testing.TB, req wire.ToolRequest) wire.Message {
	t.Helper()
	c, err := net.Dial("unix", b.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := wire.WriteEnvelope(c, wire.Request(7, req)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	env, err := wire.ReadEnvelope(bufio.NewReader(c))
	if err != nil || !env.Final {
		t.Fatalf("answer %+v: %v", env, err)
	}
	return env.Msg
}

// readableDir is a directory the tools' user (65534) can read, holding
// one file.
func readableDir(t testing.TB, name, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "notes")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEndToEndThroughBrokerSock: an auto grant's read_file, sent on
// broker.sock, runs in a container and returns the file; the session's
// taint rises to the grant's result_class; the audit log holds the
// Decision and the Result, with the content's hash and size, and verifies.
func TestEndToEndThroughBrokerSock(t *testing.T) {
	b := startBrokerd(t)
	notes := readableDir(t, "a.md", "the owner's note\n")
	g := fmt.Sprintf("tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = false\n[constraints]\npaths = [%q]\n", notes)
	if err := os.WriteFile(filepath.Join(b.grants, "notes-read.toml"), []byte(g), 0o600); err != nil {
		t.Fatal(err)
	}
	sid, _ := wire.NewSessionID("chat-e2e")
	msg := b.call(t, wire.ToolRequest{Session: sid, Call: 1, Tool: "read_file", Arguments: `{"path":"` + notes + `/a.md"}`})
	want := wire.ResultResponse{Content: "the owner's note\n", Class: wire.Secret, Untrusted: false, Truncated: false}
	if msg != want {
		t.Fatalf("answer %#v, want %#v", msg, want)
	}

	st, err := os.ReadFile(filepath.Join(b.home, "broker", "sessions", "chat-e2e.json"))
	if err != nil || string(st) != `{"taint":"secret","untrusted":false}` {
		t.Fatalf("session state %q: %v", st, err)
	}

	rep, err := audit.VerifyDir(filepath.Join(b.home, "audit"))
	if err != nil || rep.Failure != nil {
		t.Fatalf("audit verify: %+v %v", rep.Failure, err)
	}
	files, _ := filepath.Glob(filepath.Join(b.home, "audit", "*.jsonl"))
	var events []wire.AuditEvent
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r wire.AuditRecord
			if err := wire.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			events = append(events, r.Event)
		}
	}
	if len(events) != 2 {
		t.Fatalf("audit events %#v", events)
	}
	d, ok := events[0].(wire.DecisionEvent)
	if !ok || d.Tool != "read_file" || d.Outcome != (wire.OutcomeAllowed{}) || *d.Grant != "notes-read" || d.Taint != wire.Private {
		t.Errorf("decision %#v", events[0])
	}
	r, ok := events[1].(wire.ResultEvent)
	content := []byte(want.Content)
	if !ok || r.Status != wire.StatusResult || r.Class != wire.Secret || r.Bytes != uint64(len(content)) ||
		r.Sha256 != wire.Sha256(content) || r.TaintAfter != wire.Secret || r.Truncated {
		t.Errorf("result %#v", events[1])
	}
	if strings.Contains(fmt.Sprint(events), "owner's note") {
		t.Error("the content is in the audit log")
	}
}

// BenchmarkReadFileBrokerSock is BenchmarkReadFile's comparison end to end:
// a client's tool_request on broker.sock, decided, recorded (two fsync'd
// audit records and a state file), run in a container and answered,
// against "podman run --rm" of the same image, mount and limits.
func BenchmarkReadFileBrokerSock(b *testing.B) {
	bd := startBrokerd(b)
	notes := readableDir(b, "a.md", "hello\n")
	g := fmt.Sprintf("tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [%q]\n", notes)
	if err := os.WriteFile(filepath.Join(bd.grants, "read.toml"), []byte(g), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg := podman.DefaultConfig()
	cli := append(podmantest.CLI(b), "run", "--rm", "--network=none", "--read-only", "--cap-drop=all",
		"--security-opt=no-new-privileges", "--user", cfg.User, "--log-driver=none",
		fmt.Sprintf("--ulimit=nofile=%d:%d", cfg.NoFile, cfg.NoFile), "--ulimit=nproc=16384:16384",
		fmt.Sprintf("--memory=%d", cfg.MemoryBytes), fmt.Sprintf("--pids-limit=%d", cfg.Pids),
		"-v", notes+":"+notes+":ro", "--entrypoint", "/bin/cat", podmantest.Image(b, podmantest.PrivateSocket(b)), notes+"/a.md")
	sid, _ := wire.NewSessionID("bench")
	var ours, base []time.Duration
	for i := range 30 {
		start := time.Now()
		msg := bd.call(b, wire.ToolRequest{Session: sid, Call: wire.CallID(i + 1), Tool: "read_file", Arguments: `{"path":"` + notes + `/a.md"}`})
		if r, ok := msg.(wire.ResultResponse); !ok || r.Content != "hello\n" {
			b.Fatalf("%#v", msg)
		}
		ours = append(ours, time.Since(start)) // the container's removal included

		start = time.Now()
		if out, err := exec.Command(cli[0], cli[1:]...).CombinedOutput(); err != nil || string(out) != "hello\n" {
			b.Fatalf("%s: %v\n%s", strings.Join(cli, " "), err, out)
		}
		base = append(base, time.Since(start))
	}
	podman.ReportLatency(b, ours, base)
}

// TestImageBuildCommand: brokerd image build --config reads [podman]
// socket from brokerd.toml, imports the image and prints the id that
// CheckImage then accepts; a toolkit that is not static is refused.
func TestImageBuildCommand(t *testing.T) {
	socket := podmantest.Socket(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "brokerd.toml")
	if err := os.WriteFile(conf, []byte("[paths]\nhome = \"/nonexistent\"\n\n[podman]\nsocket = \""+socket+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errs strings.Builder
		code := brokerdrole.Main("brokerd", append([]string{"image", "build", "--config", conf}, args...), strings.NewReader(""), &out, &errs)
		return code, out.String(), errs.String()
	}
	// A CA bundle no other test builds from: the first build imports.
	bundle := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(bundle, []byte(t.Name()+" "+time.Now().String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("--toolkit", podmantest.Toolkit(t), "--ca-bundle", bundle)
	id := strings.TrimSuffix(out, "\n")
	if code != 0 || !strings.HasPrefix(id, "sha256:") || len(id) != 71 || !strings.Contains(errs, ": imported "+id) ||
		!strings.Contains(errs, "set [podman] image = \""+id+"\"") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// The same files again: the same image, found, not a second one.
	code, out, errs = run("--toolkit", podmantest.Toolkit(t), "--ca-bundle", bundle)
	if code != 0 || out != id+"\n" || !strings.Contains(errs, "found, already imported, "+id) {
		t.Fatalf("a second build: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	cfg := podman.DefaultConfig()
	cfg.Socket, cfg.Image = socket, id
	if err := podman.CheckImage(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// This test binary is dynamically linked (the race detector needs cgo).
	if code, _, errs := run(); code != 1 || !strings.Contains(errs, "CGO_ENABLED=0") {
		t.Errorf("a dynamic toolkit: exit %d, %q", code, errs)
	}
	if err := os.WriteFile(conf, []byte("[podman]\nsokcet = \"unix:///x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(); code != 1 || !strings.Contains(errs, "sokcet") {
		t.Errorf("a misspelt key: exit %d, %q", code, errs)
	}
}
