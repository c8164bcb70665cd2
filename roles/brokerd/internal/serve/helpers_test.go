package serve

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/internal/syncbuf"
	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/roles/brokerd/internal/runner/runnertest"
	"boxmaker/roles/brokerd/internal/state"
	"boxmaker/wire"
)

// Grant files used across the tests. Paths and hosts are never touched:
// the recording runtime runs nothing.
const (
	grantAuto  = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"private\"\nuntrusted = false\n[constraints]\npaths = [\"/data/auto\"]\n"
	grantAsk   = "tool = \"read_file\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"private\"\nuntrusted = false\n[constraints]\npaths = [\"/data/ask\"]\n"
	grantDeny  = "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/data/deny\"]\n"
	grantSecr  = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nuntrusted = true\n[constraints]\npaths = [\"/data/secret\"]\n"
	grantShell = "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\npaths = [\"/home/kyle/scratch\"]\n"
)

// failingFile fails writes while its harness says so.
type failingFile struct {
	audit.File
	fail *atomic.Bool
}

func (f failingFile) Write(p []byte) (int, error) {
	if f.fail.Load() {
		return 0, errors.New("injected write failure")
	}
	return f.File.Write(p)
}

// failingStates fails state writes while fail is set.
type failingStates struct {
	*state.Store
	fail atomic.Bool
}

func (f *failingStates) Write(id wire.SessionID, st policy.State) error {
	if f.fail.Load() {
		return errors.New("injected state write failure")
	}
	return f.Store.Write(id, st)
}

// harness is a running brokerd in a fresh temporary home.
type harness struct {
	t         *testing.T
	dir       string
	cfg       config.Config
	rt        *runnertest.Recording
	srv       *Server
	stderr    *syncbuf.Buffer
	failAudit atomic.Bool
	states    *failingStates
	// beforeRun, when set, is called as the runtime starts a run.
	beforeRun atomic.Pointer[func()]
}

// hookedRuntime is the recording runtime with the harness's beforeRun.
type hookedRuntime struct{ h *harness }

func (r hookedRuntime) Run(ctx context.Context, spec *runner.RunSpec) (runner.Output, error) {
	if f := r.h.beforeRun.Load(); f != nil {
		(*f)()
	}
	return r.h.rt.Run(ctx, spec)
}

type option func(*Options)

// start runs brokerd with grants (file name to content) and opts. Paths are
// short: a Unix socket path is at most 107 bytes.
func start(t *testing.T, grants map[string]string, opts ...option) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "bk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &harness{t: t, dir: dir, stderr: &syncbuf.Buffer{}, rt: &runnertest.Recording{Output: runner.Output{Content: "file content"}}}
	home := filepath.Join(dir, "home")
	// The secrets directory is not made: the tests that need one do
	// (harness.secret).
	h.cfg, err = config.Parse("brokerd.toml", []byte("[paths]\nhome = \""+home+"\"\ngrants = \""+filepath.Join(dir, "grants")+
		"\"\nsecrets = \""+filepath.Join(dir, "secrets")+"\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h.cfg.Paths.Grants, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range grants {
		h.grant(name, text)
	}
	h.states = &failingStates{Store: state.New(filepath.Join(home, "broker", "sessions"))}
	if err := h.states.MakeDir(); err != nil {
		t.Fatal(err)
	}
	o := Options{Config: h.cfg, Runtime: hookedRuntime{h}, Stderr: h.stderr, States: h.states, RequestTimeout: 10 * time.Second,
		AuditOpenFile: func(name string, flag int, perm fs.FileMode) (audit.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return failingFile{f, &h.failAudit}, nil
		}}
	for _, opt := range opts {
		opt(&o)
	}
	h.cfg = o.Config
	h.srv, err = Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.srv != nil {
		if err := h.srv.Stop(); err != nil && !errors.Is(err, audit.ErrUnavailable) {
			h.t.Error(err)
		}
		h.srv = nil
	}
}

func (h *harness) grant(name, text string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.cfg.Paths.Grants, name), []byte(text), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// secret writes the secret name (mode 0600), making the secrets directory
// (mode 0700) if need be.
func (h *harness) secret(name, value string) {
	h.t.Helper()
	if err := os.MkdirAll(h.cfg.Paths.Secrets, 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.cfg.Paths.Secrets, name), []byte(value), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func sid(t testing.TB, s string) wire.SessionID {
	t.Helper()
	id, err := wire.NewSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func readReq(t testing.TB, session string, call uint64, path string) wire.ToolRequest {
	return wire.ToolRequest{Session: sid(t, session), Call: wire.CallID(call), Tool: "read_file", Arguments: `{"path":"` + path + `"}`}
}

// conn is one client connection with a buffered reader.
type conn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t testing.TB, path string) *conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{c, bufio.NewReader(c)}
}

// next reads one frame, failing the test after 10 s.
func (c *conn) next(t testing.TB) wire.Envelope {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	env, err := wire.ReadEnvelope(c.r)
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	return env
}

// send dials sock and sends msg as request 7.
func (h *harness) send(sock string, msg wire.Message) *conn {
	h.t.Helper()
	c := dial(h.t, sock)
	if err := wire.WriteEnvelope(c, wire.Request(7, msg)); err != nil {
		h.t.Fatal(err)
	}
	return c
}

// call sends a tool request and returns the final answer; it fails the
// test on a pending frame.
func (h *harness) call(req wire.ToolRequest) wire.Message {
	h.t.Helper()
	env := h.send(h.cfg.Sockets.Broker, req).next(h.t)
	if !env.Final || env.ID != 7 {
		h.t.Fatalf("got %+v, want a final answer to 7", env)
	}
	return env.Msg
}

// admin sends an admin request and returns its answer.
func (h *harness) admin(msg wire.Message) wire.Message {
	h.t.Helper()
	env := h.send(h.cfg.Sockets.Admin, msg).next(h.t)
	if !env.Final || env.ID != 7 {
		h.t.Fatalf("got %+v, want a final answer to 7", env)
	}
	return env.Msg
}

// pending sends req and reads its pending frame.
func (h *harness) pending(req wire.ToolRequest) (*conn, wire.PendingResponse) {
	h.t.Helper()
	c := h.send(h.cfg.Sockets.Broker, req)
	env := c.next(h.t)
	p, ok := env.Msg.(wire.PendingResponse)
	if !ok || env.Final {
		h.t.Fatalf("got %+v, want a pending frame", env)
	}
	return c, p
}

// records reads and parses the whole audit log.
func (h *harness) records() []wire.AuditRecord {
	h.t.Helper()
	dir := filepath.Join(h.cfg.Paths.Home, "audit")
	names, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var out []wire.AuditRecord
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if line == "" {
				continue
			}
			var rec wire.AuditRecord
			if err := wire.Unmarshal([]byte(line), &rec); err != nil {
				h.t.Fatalf("%s: %v: %s", name, err, line)
			}
			out = append(out, rec)
		}
	}
	return out
}

// events are the records' events, in order.
func (h *harness) events() []wire.AuditEvent {
	var out []wire.AuditEvent
	for _, r := range h.records() {
		out = append(out, r.Event)
	}
	return out
}

// eventually polls cond for up to 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func ptr[T any](v T) *T { return &v }
