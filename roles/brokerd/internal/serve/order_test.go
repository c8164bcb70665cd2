package serve

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

// TestAuditUnavailableRunsNothing: the Decision record cannot be written,
// so nothing runs and the call is denied audit_unavailable.
func TestAuditUnavailableRunsNothing(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto})
	h.failAudit.Store(true)
	for call := range uint64(3) {
		if got := h.call(readReq(t, "s-1", call, "/data/auto/x")); got != (wire.DeniedResponse{Reason: wire.AuditUnavailable}) {
			t.Fatalf("got %+v", got)
		}
	}
	if h.rt.Count() != 0 {
		t.Fatalf("the runtime saw %d calls", h.rt.Count())
	}
	// Printed once for the one cause, with the runbook line.
	if out := h.stderr.String(); strings.Count(out, "see docs/runbook.md#audit-unavailable\n") != 1 || !strings.Contains(out, "injected write failure") {
		t.Fatalf("stderr %q", out)
	}
}

// TestApprovalRecordUnavailable: the Approval record cannot be written, so
// the approved call does not run.
func TestApprovalRecordUnavailable(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	c, p := h.pending(askReq(t))
	h.failAudit.Store(true)
	denied := wire.OutcomeDenied{Reason: wire.AuditUnavailable}
	if got := h.admin(wire.Approve{Approval: p.Approval}); got != (wire.ApproveResult{Outcome: denied}) {
		t.Fatalf("approve answered %+v", got)
	}
	if got := c.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.AuditUnavailable}) {
		t.Fatalf("loopd got %+v", got)
	}
	if h.rt.Count() != 0 {
		t.Fatal("ran without an Approval record")
	}
}

// TestResultRecordUnavailable: the tool ran, but its Result record cannot be
// written, so its content is withheld.
func TestResultRecordUnavailable(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	c, p := h.pending(askReq(t))
	// Fail the audit log as the runtime runs: after the Approval record.
	fail := func() { h.failAudit.Store(true) }
	h.beforeRun.Store(&fail)
	h.admin(wire.Approve{Approval: p.Approval})
	if got := c.next(t).Msg; got != (wire.FailedResponse{Message: "the result could not be recorded"}) {
		t.Fatalf("loopd got %+v", got)
	}
}

// TestStateWriteFailureWithholdsContent: the raised taint cannot be written,
// so the content never reaches loopd, and no Result record claims it did.
func TestStateWriteFailureWithholdsContent(t *testing.T) {
	h := start(t, map[string]string{"s.toml": grantSecr})
	h.states.fail.Store(true)
	got := h.call(readReq(t, "s-1", 1, "/data/secret/key"))
	if got != (wire.FailedResponse{Message: "the result could not be recorded"}) {
		t.Fatalf("got %+v", got)
	}
	if h.rt.Count() != 1 {
		t.Fatalf("runs %d", h.rt.Count())
	}
	evs := h.events()
	if len(evs) != 1 {
		t.Fatalf("events %+v: want only the Decision", evs)
	}
	if out := h.stderr.String(); !strings.Contains(out, "session s-1: the raised taint could not be written") ||
		!strings.Contains(out, "see docs/runbook.md#broker-state-unwritable\n") {
		t.Fatalf("stderr %q", out)
	}
	// The state on disk is unchanged: the next call is still private.
	h.states.fail.Store(false)
	if _, exists, _ := h.states.Read(sid(t, "s-1")); exists {
		t.Fatal("a state file was written")
	}
}

// TestResultIsRecordedByHash: the Result record carries the content's size
// and hash, never the content, and the raised taint.
func TestResultIsRecordedByHash(t *testing.T) {
	h := start(t, map[string]string{"s.toml": grantSecr})
	h.rt.Output = runner.Output{Content: "hunter2-very-secret", Truncated: true}
	got := h.call(readReq(t, "s-1", 1, "/data/secret/key"))
	if got != (wire.ResultResponse{Content: "hunter2-very-secret", Class: wire.Secret, Untrusted: true, Truncated: true}) {
		t.Fatalf("got %+v", got)
	}
	evs := h.events()
	want := wire.ResultEvent{Session: sid(t, "s-1"), Call: 1, Decision: 0, Status: wire.StatusResult, Class: wire.Secret,
		Untrusted: true, Truncated: true, Bytes: 19, Sha256: wire.Sha256([]byte("hunter2-very-secret")), TaintAfter: wire.Secret}
	if len(evs) != 2 || !reflect.DeepEqual(evs[1], want) {
		t.Fatalf("events %+v", evs)
	}
	log, _ := filepath.Glob(filepath.Join(h.cfg.Paths.Home, "audit", "*.jsonl"))
	data, _ := os.ReadFile(log[0])
	if strings.Contains(string(data), "hunter2") {
		t.Fatal("the content is in the audit log")
	}
	st, _, err := h.states.Read(sid(t, "s-1"))
	if err != nil || st.Taint != wire.Secret || !st.Untrusted {
		t.Fatalf("state %+v %v", st, err)
	}
	// The next call carries the raised state in its Decision record.
	h.call(readReq(t, "s-1", 2, "/data/secret/key"))
	if d := h.events()[2].(wire.DecisionEvent); d.Taint != wire.Secret || !d.Untrusted {
		t.Fatalf("decision %+v", d)
	}
}

// TestFailedRunIsRecorded: a runtime failure reaches loopd as failed, with
// the failure message hashed in the Result record.
func TestFailedRunIsRecorded(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto})
	h.rt.Err = runner.Unavailable("the runner arrives in M3b")
	if got := h.call(readReq(t, "s-1", 1, "/data/auto/x")); got != (wire.FailedResponse{Message: "the runner arrives in M3b"}) {
		t.Fatalf("got %+v", got)
	}
	r := h.events()[1].(wire.ResultEvent)
	if r.Status != wire.StatusFailed || r.Bytes != 25 || r.Sha256 != wire.Sha256([]byte("the runner arrives in M3b")) {
		t.Fatalf("result %+v", r)
	}
}

func TestDenialsWriteOnlyTheDecision(t *testing.T) {
	h := start(t, map[string]string{"d.toml": grantDeny})
	for i, tc := range []struct {
		req  wire.ToolRequest
		want wire.DenyReason
	}{
		{readReq(t, "s-1", 1, "/data/deny/x"), wire.DeniedByGrant},
		{readReq(t, "s-1", 2, "/elsewhere"), wire.NoGrant},
		{readReq(t, "s-1", 3, "relative"), wire.InvalidArguments},
		{wire.ToolRequest{Session: sid(t, "s-1"), Call: 4, Tool: "rm", Arguments: "{}"}, wire.NoGrant},
	} {
		if got := h.call(tc.req); got != (wire.DeniedResponse{Reason: tc.want}) {
			t.Errorf("%d: got %+v, want %v", i, got, tc.want)
		}
	}
	evs := h.events()
	if len(evs) != 4 || h.rt.Count() != 0 {
		t.Fatalf("%d records, %d runs", len(evs), h.rt.Count())
	}
	if d := evs[0].(wire.DecisionEvent); d.Grant == nil || *d.Grant != "d" || d.GrantSha256 == nil ||
		*d.GrantSha256 != wire.Sha256([]byte(grantDeny)) || d.Taint != wire.Private {
		t.Fatalf("decision %+v", d)
	}
}

func TestStateUnreadable(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto})
	dir := filepath.Join(h.cfg.Paths.Home, "broker", "sessions")
	if err := os.WriteFile(filepath.Join(dir, "s-bad.json"), []byte(`{"taint":"priv`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := h.call(readReq(t, "s-bad", 1, "/data/auto/x")); got != (wire.DeniedResponse{Reason: wire.StateUnreadable}) {
		t.Fatalf("got %+v", got)
	}
	if out := h.stderr.String(); !strings.Contains(out, "session s-bad: the broker state cannot be read") ||
		!strings.Contains(out, "see docs/runbook.md#broker-state-damaged\n") {
		t.Fatalf("stderr %q", out)
	}
	// Recorded as the strictest state it may have been.
	if d := h.events()[0].(wire.DecisionEvent); d.Taint != wire.Secret || !d.Untrusted {
		t.Fatalf("decision %+v", d)
	}
	// Other sessions are not affected.
	if _, ok := h.call(readReq(t, "s-good", 1, "/data/auto/x")).(wire.ResultResponse); !ok {
		t.Fatal("another session was denied")
	}
}

// TestGrantsInvalidPrintedOnce: each distinct set of problems is printed
// once, however many calls it denies.
func TestGrantsInvalidPrintedOnce(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto, "b.toml": "tool = \"read_file\"\nmode = \"sometimes\"\nmax_taint = \"secret\"\n"})
	for call := range uint64(3) {
		if got := h.call(readReq(t, "s-1", call, "/data/auto/x")); got != (wire.DeniedResponse{Reason: wire.GrantsInvalid}) {
			t.Fatalf("got %+v", got)
		}
	}
	out := h.stderr.String()
	if strings.Count(out, "see docs/runbook.md#grants-invalid\n") != 1 || !strings.Contains(out, "\nb.toml:2: mode: ") {
		t.Fatalf("stderr %q", out)
	}
	h.grant("c.toml", "x = 1\n") // a second problem: a new set, printed
	h.call(readReq(t, "s-1", 9, "/data/auto/x"))
	if out := h.stderr.String(); strings.Count(out, "see docs/runbook.md#grants-invalid\n") != 2 || !strings.Contains(out, "\nc.toml:1: x: unknown field\n") {
		t.Fatalf("stderr %q", out)
	}
	if h.rt.Count() != 0 {
		t.Fatal("ran with invalid grants")
	}
}

// TestRuntimeSeesOnlyAllowedCalls is the runner seam seen from the socket:
// of allowed, denied, refused and approved calls for every tool, the runtime
// gets exactly the allowed and approved ones, each with M3a §7's mounts and
// egress.
func TestRuntimeSeesOnlyAllowedCalls(t *testing.T) {
	h := start(t, map[string]string{
		"read.toml":  grantAuto,
		"deny.toml":  grantDeny,
		"shell.toml": grantShell,
		"write.toml": "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/home/kyle/out\"]\n",
		"fetch.toml": "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\nhosts = [\"example.com\", \"*.example.org\"]\n",
	})
	s := sid(t, "s-1")
	h.call(readReq(t, "s-1", 1, "/data/auto/a"))
	h.call(readReq(t, "s-1", 2, "/data/deny/a"))
	h.call(wire.ToolRequest{Session: s, Call: 3, Tool: "write_file", Arguments: `{"path":"/home/kyle/out/a","content":"x"}`})
	h.call(wire.ToolRequest{Session: s, Call: 4, Tool: "write_file", Arguments: `{"path":"/home/kyle/other","content":"x"}`})
	h.call(wire.ToolRequest{Session: s, Call: 5, Tool: "http_fetch", Arguments: `{"url":"https://www.example.org/x"}`})
	h.call(wire.ToolRequest{Session: s, Call: 6, Tool: "http_fetch", Arguments: `{"url":"https://evil.com/x"}`})
	shell := wire.ToolRequest{Session: s, Call: 7, Tool: "shell", Arguments: `{"command":"make","cwd":"/home/kyle/scratch"}`}
	c, p := h.pending(shell)
	h.admin(wire.Refuse{Approval: p.Approval})
	c.next(t)
	shell.Call = 8
	c, p = h.pending(shell)
	h.admin(wire.Approve{Approval: p.Approval})
	c.next(t)

	type run struct {
		tool   string
		mounts []runner.Mount
		egress []string
		net    bool
	}
	var got []run
	for _, sp := range h.rt.Specs() {
		eg, ok := sp.Egress()
		got = append(got, run{sp.Tool().String(), sp.Mounts(), eg, ok})
	}
	want := []run{
		{"read_file", []runner.Mount{{Path: "/data/auto"}}, nil, false},
		{"write_file", []runner.Mount{{Path: "/home/kyle/out", Writable: true}}, nil, false},
		{"http_fetch", nil, []string{"example.com", "*.example.org"}, true},
		{"shell", []runner.Mount{{Path: "/home/kyle/scratch", Writable: true}}, nil, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("runs %+v\nwant %+v", got, want)
	}
}

// TestCallsOfASessionAreSerialised: concurrent calls of one session each
// see the taint the others raised; none is lost.
func TestCallsOfASessionAreSerialised(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto, "s.toml": grantSecr})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			path := "/data/auto/x"
			if i == 7 {
				path = "/data/secret/x"
			}
			h.call(readReq(t, "s-1", uint64(i), path))
		})
	}
	wg.Wait()
	st, _, err := h.states.Read(sid(t, "s-1"))
	if err != nil || st.Taint != wire.Secret || !st.Untrusted {
		t.Fatalf("state %+v %v", st, err)
	}
	// Every Decision after the secret read's Result carries its taint.
	raised := false
	for _, ev := range h.events() {
		switch e := ev.(type) {
		case wire.DecisionEvent:
			if raised && e.Taint != wire.Secret {
				t.Fatalf("a decision after the raise saw %v", e.Taint)
			}
		case wire.ResultEvent:
			raised = raised || e.TaintAfter == wire.Secret
		}
	}
}
