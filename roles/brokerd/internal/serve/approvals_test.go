package serve

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/wire"
)

func askReq(t *testing.T) wire.ToolRequest { return readReq(t, "chat-1", 1, "/data/ask/notes.md") }

func TestApprove(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	before := time.Now()
	c, p := h.pending(askReq(t))
	recs := h.records()
	if len(recs) != 1 || p.Approval != recs[0].Seq {
		t.Fatalf("pending %+v; records %+v: the approval is the Decision record's seq", p, recs)
	}
	if d, ok := recs[0].Event.(wire.DecisionEvent); !ok || d.Outcome != (wire.OutcomeAsk{}) || d.Grant == nil || *d.Grant != "a" {
		t.Fatalf("decision record %+v", recs[0].Event)
	}
	ttl := 900 * time.Second
	if exp := p.Expires.Time(); exp.Before(before.Add(ttl).Add(-time.Second)) || exp.After(time.Now().Add(ttl)) {
		t.Fatalf("expires %v, want now + 15 min", exp)
	}
	list := h.admin(wire.Approvals{}).(wire.ApprovalList)
	if len(list.Items) != 1 {
		t.Fatalf("list %+v", list)
	}
	it := list.Items[0]
	if it.Approval != p.Approval || it.Session.String() != "chat-1" || it.Call != 1 || it.Tool != "read_file" ||
		it.Arguments != `{"path":"/data/ask/notes.md"}` || it.Grant != "a" || it.Taint != wire.Private || it.Expires != p.Expires {
		t.Fatalf("item %+v", it)
	}
	if h.rt.Count() != 0 {
		t.Fatal("ran before approval")
	}
	got := h.admin(wire.Approve{Approval: p.Approval})
	if got != (wire.ApproveResult{Outcome: wire.OutcomeAsk{}}) {
		t.Fatalf("approve answered %+v", got)
	}
	final := c.next(t)
	if r, ok := final.Msg.(wire.ResultResponse); !ok || !final.Final || r.Content != "file content" || r.Class != wire.Private {
		t.Fatalf("final %+v", final)
	}
	evs := h.events()
	want := wire.ApprovalEvent{Session: sid(t, "chat-1"), Call: 1, Decision: p.Approval, Answer: wire.Approved, By: ptr("bxctl"), Outcome: wire.OutcomeAsk{}}
	if len(evs) != 3 || !reflect.DeepEqual(evs[1], want) {
		t.Fatalf("events %+v", evs)
	}
	if r, ok := evs[2].(wire.ResultEvent); !ok || r.Decision != p.Approval || r.Status != wire.StatusResult {
		t.Fatalf("result %+v", evs[2])
	}
	if h.rt.Count() != 1 || len(h.admin(wire.Approvals{}).(wire.ApprovalList).Items) != 0 {
		t.Fatal("not run once, or still listed")
	}
}

func TestRefuse(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	c, p := h.pending(askReq(t))
	if got := h.admin(wire.Refuse{Approval: p.Approval, Reason: ptr("not today")}); got != (wire.OK{}) {
		t.Fatalf("refuse answered %+v", got)
	}
	if got := c.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.ApprovalRefused}) {
		t.Fatalf("loopd got %+v", got)
	}
	evs := h.events()
	want := wire.ApprovalEvent{Session: sid(t, "chat-1"), Call: 1, Decision: p.Approval, Answer: wire.Refused, By: ptr("bxctl"),
		Reason: ptr("not today"), Outcome: wire.OutcomeDenied{Reason: wire.ApprovalRefused}}
	if len(evs) != 2 || !reflect.DeepEqual(evs[1], want) || h.rt.Count() != 0 {
		t.Fatalf("events %+v, runs %d", evs, h.rt.Count())
	}
}

func TestExpire(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk}, func(o *Options) { o.Config.Approvals.TTLMs = 100 })
	sent := time.Now()
	c, p := h.pending(askReq(t))
	if d := p.Expires.Time().Sub(sent); d > 200*time.Millisecond {
		t.Fatalf("expires %v after sending", d)
	}
	// The sweep runs every second.
	if got := c.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.ApprovalExpired}) {
		t.Fatalf("loopd got %+v", got)
	}
	if waited := time.Since(sent); waited > 3*time.Second {
		t.Errorf("expired after %v", waited)
	}
	evs := h.events()
	want := wire.ApprovalEvent{Session: sid(t, "chat-1"), Call: 1, Decision: p.Approval, Answer: wire.Expired,
		Outcome: wire.OutcomeDenied{Reason: wire.ApprovalExpired}}
	if len(evs) != 2 || !reflect.DeepEqual(evs[1], want) || h.rt.Count() != 0 {
		t.Fatalf("events %+v", evs)
	}
	if e, ok := h.admin(wire.Approve{Approval: p.Approval}).(wire.WireError); !ok || e.Code != wire.NoSuchApproval {
		t.Fatalf("approve after expiry: %+v", e)
	}
}

// TestExpiresWithTheGrant: a grant expiring before the ttl ends the wait.
func TestExpiresWithTheGrant(t *testing.T) {
	exp := wire.TimestampOf(time.Now().Add(5 * time.Minute))
	h := start(t, map[string]string{"a.toml": "expires = \"" + exp.String() + "\"\n" + grantAsk})
	_, p := h.pending(askReq(t))
	if p.Expires != exp {
		t.Fatalf("expires %v, want the grant's %v", p.Expires, exp)
	}
}

func TestApproveAfterGrantRemoved(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	c, p := h.pending(askReq(t))
	if err := os.Remove(filepath.Join(h.cfg.Paths.Grants, "a.toml")); err != nil {
		t.Fatal(err)
	}
	denied := wire.OutcomeDenied{Reason: wire.NoGrant}
	if got := h.admin(wire.Approve{Approval: p.Approval}); got != (wire.ApproveResult{Outcome: denied}) {
		t.Fatalf("approve answered %+v", got)
	}
	if got := c.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.NoGrant}) {
		t.Fatalf("loopd got %+v", got)
	}
	evs := h.events()
	if len(evs) != 2 || evs[1].(wire.ApprovalEvent).Answer != wire.Approved || evs[1].(wire.ApprovalEvent).Outcome != denied || h.rt.Count() != 0 {
		t.Fatalf("events %+v, runs %d", evs, h.rt.Count())
	}
}

// TestApproveAfterTaintRose: while the call waits, another call of the
// session reads a secret; the approved call is decided again with that
// taint, and its grant (max_taint private) no longer covers it.
func TestApproveAfterTaintRose(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk, "s.toml": grantSecr})
	c, p := h.pending(askReq(t))
	if r, ok := h.call(readReq(t, "chat-1", 2, "/data/secret/key")).(wire.ResultResponse); !ok || r.Class != wire.Secret {
		t.Fatalf("secret read: %+v", r)
	}
	denied := wire.OutcomeDenied{Reason: wire.TaintTooHigh}
	if got := h.admin(wire.Approve{Approval: p.Approval}); got != (wire.ApproveResult{Outcome: denied}) {
		t.Fatalf("approve answered %+v", got)
	}
	if got := c.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.TaintTooHigh}) {
		t.Fatalf("loopd got %+v", got)
	}
	if h.rt.Count() != 1 {
		t.Fatalf("%d runs, want only the secret read", h.rt.Count())
	}
}

// TestApproveRunsUnderTheGrantMatchedNow: the owner has since allowed the
// call outright; it runs, under the auto grant.
func TestApproveRunsUnderTheGrantMatchedNow(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	c, p := h.pending(askReq(t))
	os.Remove(filepath.Join(h.cfg.Paths.Grants, "a.toml"))
	h.grant("b.toml", "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\n[constraints]\npaths = [\"/data\"]\n")
	if got := h.admin(wire.Approve{Approval: p.Approval}); got != (wire.ApproveResult{Outcome: wire.OutcomeAllowed{}}) {
		t.Fatalf("approve answered %+v", got)
	}
	if r, ok := c.next(t).Msg.(wire.ResultResponse); !ok || r.Class != wire.Public {
		t.Fatalf("loopd got %+v, want a result of class public (grant b)", r)
	}
}

func TestApproveUnknownID(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	for _, msg := range []wire.Message{wire.Approve{Approval: 41}, wire.Refuse{Approval: 41}} {
		if e, ok := h.admin(msg).(wire.WireError); !ok || e.Code != wire.NoSuchApproval || e.Detail != "no pending approval 41" {
			t.Errorf("%s 41: got %+v", msg.Kind(), e)
		}
	}
	// An answered approval is no longer pending either.
	c, p := h.pending(askReq(t))
	h.admin(wire.Refuse{Approval: p.Approval})
	c.next(t)
	for _, msg := range []wire.Message{wire.Approve{Approval: p.Approval}, wire.Refuse{Approval: p.Approval}} {
		if e, ok := h.admin(msg).(wire.WireError); !ok || e.Code != wire.NoSuchApproval {
			t.Errorf("%s of an answered approval: got %+v", msg.Kind(), e)
		}
	}
}

func TestDroppedConnectionWhilePending(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	c, p := h.pending(askReq(t))
	c.Close()
	eventually(t, "the entry to go", func() bool { return len(h.admin(wire.Approvals{}).(wire.ApprovalList).Items) == 0 })
	if e, ok := h.admin(wire.Approve{Approval: p.Approval}).(wire.WireError); !ok || e.Code != wire.NoSuchApproval {
		t.Fatalf("approve after the drop: %+v", e)
	}
	if n := len(h.records()); n != 1 || h.rt.Count() != 0 {
		t.Fatalf("%d records (want only the Decision), %d runs", n, h.rt.Count())
	}
	h.stop()
	rep, err := audit.VerifyDir(filepath.Join(h.cfg.Paths.Home, "audit"))
	if err != nil || rep.Failure != nil || !reflect.DeepEqual(rep.Abandoned, []uint64{p.Approval}) {
		t.Fatalf("verify: %+v, %v; want abandoned [%d]", rep, err, p.Approval)
	}
}

// TestNoApprovalsAfterRestart: the table is in memory only.
func TestNoApprovalsAfterRestart(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	h.pending(askReq(t))
	h.stop()
	var err error
	h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr})
	if err != nil {
		t.Fatal(err)
	}
	if l := h.admin(wire.Approvals{}).(wire.ApprovalList); len(l.Items) != 0 {
		t.Fatalf("after restart: %+v", l)
	}
}
