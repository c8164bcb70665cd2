package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// grantFetch lets any session fetch from example.com while it has seen
// nothing above private; grantAskAny asks for any taint.
const (
	grantFetch  = "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\nresult_class = \"public\"\n[constraints]\nhosts = [\"example.com\"]\n"
	grantAskAny = "tool = \"read_file\"\nmode = \"ask\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/data/ask-any\"]\n"
)

func fetchReq(t testing.TB, session string, call uint64) wire.ToolRequest {
	return wire.ToolRequest{Session: sid(t, session), Call: wire.CallID(call), Tool: "http_fetch",
		Arguments: `{"url":"https://example.com/?q=the-secret"}`}
}

// TestTaintFloorStopsLaundering is issue 12's item 3 over broker.sock:
// session A reads a result of class secret; then a fresh session B and an
// existing private session C ask for http_fetch under a grant with
// max_taint private, and both are denied taint_too_high, with the secret
// taint in their Decision records. An approval of a fourth session shows
// the same taint, and a restarted brokerd keeps the floor.
func TestTaintFloorStopsLaundering(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto, "s.toml": grantSecr, "f.toml": grantFetch, "k.toml": grantAskAny})
	// Before: C has a private result and may fetch.
	if _, ok := h.call(readReq(t, "chat-c", 1, "/data/auto/x")).(wire.ResultResponse); !ok {
		t.Fatal("C's read was not run")
	}
	if _, ok := h.call(fetchReq(t, "chat-c", 2)).(wire.ResultResponse); !ok {
		t.Fatal("C's fetch was not run before the secret")
	}
	if r, ok := h.call(readReq(t, "chat-a", 1, "/data/secret/key")).(wire.ResultResponse); !ok || r.Class != wire.Secret {
		t.Fatalf("A's secret read: %+v", r)
	}
	runs := h.rt.Count()
	tooHigh := wire.DeniedResponse{Reason: wire.TaintTooHigh}
	for _, s := range []string{"chat-b", "chat-c"} {
		if got := h.call(fetchReq(t, s, 3)); got != tooHigh {
			t.Fatalf("%s: got %+v, want taint_too_high", s, got)
		}
	}
	if h.rt.Count() != runs {
		t.Fatal("a fetch ran after the secret")
	}
	evs := h.events()
	for _, ev := range evs[len(evs)-2:] {
		if d, ok := ev.(wire.DecisionEvent); !ok || d.Taint != wire.Secret || d.Outcome != (wire.OutcomeDenied{Reason: wire.TaintTooHigh}) {
			t.Fatalf("decision %+v", ev)
		}
	}
	if r, ok := evs[len(evs)-3].(wire.ResultEvent); !ok || r.TaintAfter != wire.Secret {
		t.Fatalf("A's result %+v", evs[len(evs)-3])
	}
	floor := filepath.Join(h.cfg.Paths.Home, "broker", "floor.json")
	if data, err := os.ReadFile(floor); err != nil || string(data) != `{"taint":"secret"}` {
		t.Fatalf("floor %q %v", data, err)
	}
	// Each session's own file keeps its own taint; the floor is separate.
	if data, _ := os.ReadFile(filepath.Join(h.cfg.Paths.Home, "broker", "sessions", "chat-c.json")); string(data) != `{"taint":"private","untrusted":true}` {
		t.Fatalf("C's state %q", data)
	}
	// The owner is shown the taint the call is decided with.
	c, p := h.pending(readReq(t, "chat-d", 1, "/data/ask-any/x"))
	if l := h.admin(wire.Approvals{}).(wire.ApprovalList); len(l.Items) != 1 || l.Items[0].Taint != wire.Secret {
		t.Fatalf("approvals %+v", l)
	}
	h.admin(wire.Refuse{Approval: p.Approval})
	c.next(t)

	h.stop()
	var err error
	if h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr}); err != nil {
		t.Fatal(err)
	}
	if got := h.call(fetchReq(t, "chat-e", 1)); got != tooHigh {
		t.Fatalf("after a restart: got %+v", got)
	}
}

// TestTaintFloorUnreadable: a floor file that exists but cannot be parsed
// denies every call (state_unreadable), recorded as the strictest state,
// and brokerd says so once, with the runbook entry.
func TestTaintFloorUnreadable(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto})
	h.stop()
	floor := filepath.Join(h.cfg.Paths.Home, "broker", "floor.json")
	for _, bad := range []string{`{"taint":"priv`, `{"taint":"top"}`, `{"taint":"public","x":1}`, strings.Repeat(" ", 600)} {
		if err := os.WriteFile(floor, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		h.stderr.Reset()
		if h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr}); err != nil {
			t.Fatal(err)
		}
		for call := range uint64(2) {
			if got := h.call(readReq(t, "s-1", call, "/data/auto/x")); got != (wire.DeniedResponse{Reason: wire.StateUnreadable}) {
				t.Fatalf("%q: got %+v", bad, got)
			}
		}
		if out := h.stderr.String(); strings.Count(out, "see docs/runbook.md#broker-floor-damaged\n") != 2 ||
			!strings.Contains(out, "the taint floor cannot be read") {
			t.Fatalf("%q: stderr %q", bad, out)
		}
		evs := h.events()
		if d := evs[len(evs)-1].(wire.DecisionEvent); d.Taint != wire.Secret || !d.Untrusted {
			t.Fatalf("decision %+v", d)
		}
		h.stop()
	}
	if h.rt.Count() != 0 {
		t.Fatal("ran with a damaged floor")
	}
}

// TestTaintFloorWriteFailureWithholdsContent: when the raised floor cannot
// be written, the result is withheld, and the floor still holds in memory
// for every later decision.
func TestTaintFloorWriteFailureWithholdsContent(t *testing.T) {
	h := start(t, map[string]string{"s.toml": grantSecr, "f.toml": grantFetch})
	// A directory that is not empty where the temporary file goes makes
	// the write fail (an empty one is removed, like any leftover).
	if err := os.MkdirAll(filepath.Join(h.cfg.Paths.Home, "broker", "floor.json.tmp", "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	got := h.call(readReq(t, "chat-a", 1, "/data/secret/key"))
	if got != (wire.FailedResponse{Message: "the result could not be recorded"}) {
		t.Fatalf("got %+v", got)
	}
	if out := h.stderr.String(); !strings.Contains(out, "the raised taint floor could not be written") ||
		!strings.Contains(out, "see docs/runbook.md#broker-state-unwritable\n") {
		t.Fatalf("stderr %q", out)
	}
	if got := h.call(fetchReq(t, "chat-b", 1)); got != (wire.DeniedResponse{Reason: wire.TaintTooHigh}) {
		t.Fatalf("B: got %+v", got)
	}
}

// TestTaintFloorStartsFromSessions: a home from before the floor, with a
// secret session and no floor file, starts with the floor at secret.
func TestTaintFloorStartsFromSessions(t *testing.T) {
	h := start(t, map[string]string{"f.toml": grantFetch})
	h.stop()
	sessions := filepath.Join(h.cfg.Paths.Home, "broker", "sessions")
	os.Remove(filepath.Join(h.cfg.Paths.Home, "broker", "floor.json"))
	if err := os.WriteFile(filepath.Join(sessions, "old.json"), []byte(`{"taint":"secret","untrusted":false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr}); err != nil {
		t.Fatal(err)
	}
	if got := h.call(fetchReq(t, "chat-new", 1)); got != (wire.DeniedResponse{Reason: wire.TaintTooHigh}) {
		t.Fatalf("got %+v", got)
	}
	if data, _ := os.ReadFile(filepath.Join(h.cfg.Paths.Home, "broker", "floor.json")); string(data) != `{"taint":"secret"}` {
		t.Fatalf("floor %q", data)
	}
}
