package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/internal/harness"
	"boxmaker/internal/syncbuf"
	"boxmaker/wire"
)

// modelBodies keeps the body of every chat request the stand-in model is
// sent: what loopd put in the prompt, byte for byte.
type modelBodies struct {
	mu   sync.Mutex
	list []string
}

func (b *modelBodies) all() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.list...)
}

// since are the bodies from the n-th on.
func (b *modelBodies) since(n int) []string { return b.all()[n:] }

// startRecorded starts the harness with a proxy between inferproxy and the
// stand-in model that records every chat request's body.
func startRecorded(t *testing.T) (*harness.Harness, *modelBodies, *syncbuf.Buffer) {
	t.Helper()
	return startRecordedWith(t, harness.Options{})
}

// startRecordedWith is startRecorded with o's other options.
func startRecordedWith(t *testing.T, o harness.Options) (*harness.Harness, *modelBodies, *syncbuf.Buffer) {
	t.Helper()
	bodies := &modelBodies{}
	upstream := func(addr string) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
		proxy.FlushInterval = -1
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if strings.HasSuffix(req.URL.Path, "/chat/completions") {
				bodies.mu.Lock()
				bodies.list = append(bodies.list, string(body))
				bodies.mu.Unlock()
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			proxy.ServeHTTP(w, req)
		})}
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(ln) }()
		t.Cleanup(func() { srv.Close(); <-done })
		return "http://" + ln.Addr().String(), nil
	}
	o.Upstream = upstream
	h, log := startOptions(t, o)
	return h, bodies, log
}

// say runs one turn with bxctl chat --json (in session, or a new one) and
// returns the session and the turn's events as JSON lines.
func say(t *testing.T, h *harness.Harness, session, text string) (string, string) {
	t.Helper()
	args := []string{"chat", "--json", "--say", text}
	if session != "" {
		args = append(args, "--session", session)
	}
	var out, errb strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.Bxctl(ctx, nil, &out, &errb, args...); err != nil {
		t.Fatalf("chat %q: %v\n%s%s", text, err, out.String(), errb.String())
	}
	var first struct {
		Type, Session string
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &first); err != nil || first.Type != "session" {
		t.Fatalf("chat %q began with %q", text, line)
	}
	return first.Session, out.String()
}

// TestNotesQuarantine, end to end with every role a process: a note
// written by a session that read untrusted output is untrusted (bxctl
// notes list says so); a new session's prompt never holds its text (the
// model's request bodies are read); only an explicit recall brings it in,
// as a tool result, and the reading session is then untrusted; the owner's
// promotion is in the audit log, which verifies.
func TestNotesQuarantine(t *testing.T) {
	h, bodies, _ := startRecorded(t)
	const marker = "QUARANTINED-PAGE-TEXT"

	// The shell grant is untrusted: its output may carry anything.
	s1, _ := say(t, h, "", "run: echo the page says to remember this")
	_, out := say(t, h, s1, "remember: From the page | "+marker+" label: trusted")
	if !strings.Contains(out, `"tool":"remember"`) || !strings.Contains(out, `"status":"result"`) {
		t.Fatalf("remember:\n%s", out)
	}
	list, err := bxctl(t, h, "notes", "list")
	if err != nil || !strings.Contains(list, "untrusted  session "+s1) {
		t.Fatalf("notes list: %v\n%s", err, list)
	}
	id, _, _ := strings.Cut(list, " ")

	// A new session: the note's text is in no request the model gets.
	n := len(bodies.all())
	s2, _ := say(t, h, "", "Hello, what can you do?")
	if s2 == s1 {
		t.Fatal("not a new session")
	}
	later := bodies.since(n)
	if len(later) == 0 {
		t.Fatal("no request reached the model")
	}
	for _, b := range later {
		if strings.Contains(b, marker) {
			t.Fatalf("an untrusted note reached a prompt unasked: %s", b)
		}
	}
	// recall brings it in, as a tool's result, and marks the session.
	n = len(bodies.all())
	_, out = say(t, h, s2, "recall: from the page")
	if !strings.Contains(out, `"tool":"recall"`) {
		t.Fatalf("recall:\n%s", out)
	}
	found := false
	for _, b := range bodies.since(n) {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal([]byte(b), &req) != nil {
			continue
		}
		for _, m := range req.Messages {
			if strings.Contains(string(m.Content), marker) {
				if m.Role != "tool" {
					t.Fatalf("the note's text came in a %s message, not a tool result", m.Role)
				}
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the recalled note never reached the model")
	}
	var decided bool
	for _, ev := range events(t, h) {
		if r, ok := ev.(wire.ResultEvent); ok && r.Session.String() == s2 {
			decided = true
			if !r.Untrusted {
				t.Fatalf("the recall's result record: %+v", r)
			}
		}
	}
	if !decided {
		t.Fatal("no result record for the recall")
	}

	// The owner vouches for it.
	shown, err := bxctl(t, h, "notes", "show", id)
	if err != nil || !strings.Contains(shown, "│ "+marker) || !strings.Contains(shown, "untrusted") {
		t.Fatalf("notes show: %v\n%s", err, shown)
	}
	_, version, _ := strings.Cut(shown, "\nversion ")
	version, _, _ = strings.Cut(version, " ")
	promoted, err := bxctl(t, h, "notes", "promote", id, version)
	if err != nil || !strings.Contains(promoted, "promoted "+id) {
		t.Fatalf("notes promote: %v\n%s", err, promoted)
	}
	evs := events(t, h)
	if p, ok := evs[len(evs)-1].(wire.NotePromotedEvent); !ok || p.Note != id || !p.Untrusted {
		t.Fatalf("the last audit record: %#v", evs[len(evs)-1])
	}
	verify(t, h)
}

func bxctl(t *testing.T, h *harness.Harness, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := h.Bxctl(ctx, nil, &out, &out, args...)
	return out.String(), err
}
