package gateway

import (
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

// TestOutage: gatewayd down at start, with two approvals pending: one line
// with the runbook pointer for the whole outage; when gatewayd comes, both
// requests arrive and one line says it answers again. Then it goes away
// while they wait (the connections drop): one more line, and both are sent
// again when it is back. Nothing ends the approvals meanwhile.
func TestOutage(t *testing.T) {
	r, _ := newRig(t, false)
	r.setHead(9)
	_, ans1, _ := r.pending(41)
	_, ans2, _ := r.pending(42)
	r.waitLog("gatewayd-unreachable", 1)
	time.Sleep(200 * time.Millisecond) // many tries at 10 to 40 ms
	if n := r.count("gatewayd-unreachable"); n != 1 {
		t.Fatalf("%d outage lines: %q", n, r.logged())
	}
	want := "gatewayd on " + r.sock + " cannot be reached or refuses"
	if l := r.logged()[0]; !strings.Contains(l, want) || !strings.Contains(l, "`bxctl approve`") ||
		!strings.HasSuffix(l, "\nsee docs/runbook.md#gatewayd-unreachable") {
		t.Fatalf("outage line %q", l)
	}

	for round := 1; round <= 2; round++ {
		g := gatewaytest.Listen(t, r.sock)
		reqs := map[uint64]*gatewaytest.Request{}
		for range 2 {
			req := g.Request(t)
			reqs[req.Msg.Approval] = req
			req.Send(t, false, wire.ApprovalPosted{Post: postID})
		}
		if reqs[41] == nil || reqs[42] == nil {
			t.Fatalf("round %d: requests %v", round, reqs)
		}
		r.waitLog("answers again", round)
		noAnswer(t, ans1)
		noAnswer(t, ans2)
		g.Close() // gatewayd stops: both connections drop
		r.waitLog("gatewayd-unreachable", round+1)
		time.Sleep(100 * time.Millisecond)
		if n := r.count("gatewayd-unreachable"); n != round+1 {
			t.Fatalf("round %d: %d outage lines: %q", round, n, r.logged())
		}
	}
	noAnswer(t, ans1)
	noAnswer(t, ans2)
}

// TestRefusedRequestIsRetried: gatewayd answers the request with an error
// (it cannot post): an outage line, and the request is sent again.
func TestRefusedRequestIsRetried(t *testing.T) {
	r, g := newRig(t, true)
	r.setHead(1)
	_, ans, _ := r.pending(41)
	req := g.Request(t)
	req.Send(t, true, wire.WireError{Code: wire.Internal, Detail: "mattermost: 502 Bad Gateway"})
	r.waitLog("gatewayd-unreachable", 1)
	if !strings.Contains(r.logged()[0], "mattermost: 502 Bad Gateway") {
		t.Fatalf("log %q", r.logged())
	}
	again := g.Request(t)
	again.Send(t, false, wire.ApprovalPosted{Post: postID})
	r.waitLog("answers again", 1)
	noAnswer(t, ans)
	again.Send(t, true, approved())
	if a := answer(t, ans); a.Answer != wire.Approved {
		t.Fatalf("answer %+v", a)
	}
}

// TestHeads: the head goes to gatewayd on each tick only when records were
// written since the last head it took: none while it stays where
// broker_start left it, one for a new head, and again after a failed try.
func TestHeads(t *testing.T) {
	r, g := newRig(t, true, func(o *Options) { o.HeadEvery = 20 * time.Millisecond })
	// broker_start may have gone before this head was set: it then goes on
	// the next tick as an audit_head.
	h1 := r.setHead(5)
	g.Wait(t, 0, "the first head", func(m wire.Message) bool {
		s, ok := m.(wire.BrokerStart)
		return ok && s.Head != nil && *s.Head == h1 || m == wire.Message(h1)
	})
	time.Sleep(100 * time.Millisecond)
	countHeads := func(h wire.AuditHead) int {
		n := 0
		for _, m := range g.Got() {
			if m == wire.Message(h) {
				n++
			}
		}
		return n
	}
	if n := countHeads(h1); n > 1 {
		t.Fatalf("head %d sent %d times", h1.Seq, n)
	}
	g.SetReply(func(m wire.Message) wire.Message {
		if _, ok := m.(wire.AuditHead); ok {
			return wire.WireError{Code: wire.Internal, Detail: "mattermost down"}
		}
		return nil
	})
	h2 := r.setHead(6)
	_, i := g.Wait(t, 0, "head 6", func(m wire.Message) bool { return m == wire.Message(h2) })
	g.SetReply(nil)
	g.Wait(t, i+1, "head 6 again", func(m wire.Message) bool { return m == wire.Message(h2) })
	r.waitLog("answers again", 1)
	time.Sleep(100 * time.Millisecond)
	n := countHeads(h2)
	time.Sleep(100 * time.Millisecond)
	if countHeads(h2) != n {
		t.Fatalf("head 6 kept being sent once taken: %+v", g.Got())
	}
}

// TestTooLarge: an approval whose request does not fit in a frame is
// logged once and never sent; it waits for bxctl, and its end is still
// told.
func TestTooLarge(t *testing.T) {
	r, g := newRig(t, true)
	r.setHead(1)
	sess, _ := wire.NewSessionID("chat-1")
	p := wire.PendingApproval{Approval: 43, Session: sess, Call: 1, Tool: "write_file", Grant: "g", Taint: wire.Public,
		Arguments: `{"content":"` + strings.Repeat(`\"`, wire.MaxFrame/2) + `"}`}
	ans := r.table.Add(p)
	ended := r.c.Pending(p)
	r.waitLog("see docs/runbook.md#gatewayd-approval-too-large", 1)
	noAnswer(t, ans)
	ended(wire.ApprovalEnded{Approval: 43, End: wire.EndAbandoned})
	g.Ended(t, 43)
	if r.count("too large") != 1 || r.count("gatewayd-unreachable") != 0 {
		t.Fatalf("log %q", r.logged())
	}
}

// TestCloseWithGatewaydDown: Close waits for approval_ended no longer than
// its grace, and every goroutine ends.
func TestCloseWithGatewaydDown(t *testing.T) {
	r, _ := newRig(t, false, func(o *Options) { o.EndGrace = 300 * time.Millisecond; o.RetryMin = 200 * time.Millisecond })
	r.setHead(1)
	_, _, ended := r.pending(41)
	ended(wire.ApprovalEnded{Approval: 41, End: wire.EndAbandoned})
	start := time.Now()
	r.c.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	// After Close, nothing more starts.
	sess, _ := wire.NewSessionID("chat-2")
	r.c.Pending(wire.PendingApproval{Approval: 50, Session: sess})(wire.ApprovalEnded{Approval: 50, End: wire.EndAbandoned})
}
