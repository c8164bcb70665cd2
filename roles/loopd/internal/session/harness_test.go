package session

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/wire"
)

// env is one loopd home with a fake llama-server behind a Unix socket.
type env struct {
	t      *testing.T
	home   string
	fake   *fakellama.Server
	client *llama.Client
	cfg    Config
	mgr    *Manager

	mu      sync.Mutex
	reports []string
}

const testCore = "The owner is Kyle. He keeps notes in /home/kyle/notes."

func newEnv(t *testing.T, opts fakellama.Options, port tools.ToolPort) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "loopd") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(CorePath(home), []byte(testCore), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "infer.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return time.Unix(1758096300, 0) }
	}
	fake := fakellama.New(opts)
	done := make(chan error, 1)
	go func() { done <- fake.Serve(ln) }()
	e := &env{t: t, home: home, fake: fake}
	e.client = llama.New(sock, 500*time.Millisecond, 500*time.Millisecond)
	var tick atomic.Int64
	e.cfg = Config{
		Home: home, SystemPrompt: "You are a test.", MaxSteps: 8, EpochPercent: 75,
		Model: e.client, Tools: &tools.Runner{Port: port},
		Now:    func() time.Time { return time.UnixMilli(1758096300000 + tick.Add(1)) },
		Report: e.report,
	}
	t.Cleanup(func() {
		if e.mgr != nil {
			e.mgr.Close()
		}
		e.client.Close()
		fake.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	e.restart()
	return e
}

func (e *env) report(msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reports = append(e.reports, msg)
}

func (e *env) takeReports() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.reports
	e.reports = nil
	return r
}

// restart drops the manager and builds a new one from the same home: what
// a restarted loopd does.
func (e *env) restart() {
	if e.mgr != nil {
		if err := e.mgr.Close(); err != nil {
			e.t.Fatal(err)
		}
	}
	e.mgr = New(e.cfg)
}

// say runs a turn and returns its events; it checks their order.
func (e *env) say(id *wire.SessionID, text string) []wire.TurnEvent {
	e.t.Helper()
	var evs []wire.TurnEvent
	e.mgr.Say(context.Background(), id, text, func(ev wire.TurnEvent) { evs = append(evs, ev) })
	checkOrder(e.t, evs)
	return evs
}

func checkOrder(t *testing.T, evs []wire.TurnEvent) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, ev := range evs {
		last := i == len(evs)-1
		switch ev.(type) {
		case wire.TurnReply, wire.TurnFailed:
			if !last {
				t.Fatalf("event %d of %d is final: %#v", i, len(evs), evs)
			}
		case wire.TurnSession:
			if i != 0 {
				t.Fatalf("session event at %d: %#v", i, evs)
			}
		default:
			if last || i == 0 {
				t.Fatalf("event %d of %d: %#v", i, len(evs), evs)
			}
		}
	}
}

func sessionOf(t *testing.T, evs []wire.TurnEvent) wire.SessionID {
	t.Helper()
	s, ok := evs[0].(wire.TurnSession)
	if !ok {
		t.Fatalf("first event %#v", evs[0])
	}
	return s.Session
}

func replyOf(t *testing.T, evs []wire.TurnEvent) string {
	t.Helper()
	r, ok := evs[len(evs)-1].(wire.TurnReply)
	if !ok {
		t.Fatalf("turn did not end with a reply: %#v", evs[len(evs)-1])
	}
	return r.Content
}

func failedOf(t *testing.T, evs []wire.TurnEvent) string {
	t.Helper()
	r, ok := evs[len(evs)-1].(wire.TurnFailed)
	if !ok {
		t.Fatalf("turn did not fail: %#v", evs[len(evs)-1])
	}
	return r.Message
}

// records reads an epoch's log.
func (e *env) records(id wire.SessionID, epoch wire.Epoch) []wire.LogRecord {
	e.t.Helper()
	log, err := sessionlog.Read(sessionlog.Path(e.home, id, epoch))
	if err != nil {
		e.t.Fatal(err)
	}
	return log.Records
}

func count[T wire.LogRecord](recs []wire.LogRecord) int {
	n := 0
	for _, r := range recs {
		if _, ok := r.(T); ok {
			n++
		}
	}
	return n
}

// chats is the fake's chat completion requests, in order.
func (e *env) chats() []fakellama.Request {
	var out []fakellama.Request
	for _, r := range e.fake.Requests() {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			out = append(out, r)
		}
	}
	return out
}

// fullHits checks that each answered request from first on kept all of the
// previous request's prompt and answer in the slot's cache.
func fullHits(t *testing.T, reqs []fakellama.Request, first int) int {
	t.Helper()
	checked := 0
	var prev *fakellama.ChatStats
	for i, r := range reqs {
		if r.Chat == nil || r.Outcome != fakellama.OutcomeComplete {
			continue
		}
		if i >= first && prev != nil {
			if want := prev.PromptTokens + prev.PredictedN; r.Chat.CacheN != want {
				t.Errorf("request %d: cache_n %d, want %d (the whole previous prompt and answer)", i, r.Chat.CacheN, want)
			}
			checked++
		}
		prev = r.Chat
	}
	return checked
}

// recPort is a ToolPort that records requests and answers from a list.
type recPort struct {
	mu   sync.Mutex
	got  []wire.ToolRequest
	resp func(wire.ToolRequest) wire.ToolResponse
}

func (p *recPort) Call(_ context.Context, req wire.ToolRequest, _ func(wire.PendingResponse)) wire.ToolResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, req)
	return p.resp(req)
}
