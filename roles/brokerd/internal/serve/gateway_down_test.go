package serve

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

const unreachableLine = "see docs/runbook.md#gatewayd-unreachable"

// TestGatewaydDown: brokerd starts while gatewayd is down and serves at
// once; one line names the socket and the runbook entry; bxctl approves as
// before. When gatewayd comes, a call pending then is sent to it and can
// be answered there. When it goes away while a call waits, one more line,
// and the request is sent again once it is back; the call waits throughout
// and is answered on Mattermost in the end.
func TestGatewaydDown(t *testing.T) {
	var g *gatewaytest.Gatewayd
	h := start(t, map[string]string{"a.toml": grantAsk}, withGatewayd(t, false, &g))
	c, p := h.pending(askReq(t))
	eventually(t, "the outage line", func() bool { return strings.Contains(h.stderr.String(), unreachableLine) })
	if got := h.admin(wire.Approve{Approval: p.Approval}); got != (wire.ApproveResult{Outcome: wire.OutcomeAsk{}}) {
		t.Fatalf("approve answered %+v", got)
	}
	if r, ok := c.next(t).Msg.(wire.ResultResponse); !ok || r.Content != "file content" {
		t.Fatalf("loopd got %+v", r)
	}
	out := h.stderr.String()
	if strings.Count(out, unreachableLine) != 1 || !strings.Contains(out, "gatewayd on "+h.cfg.Sockets.Gateway+" cannot be reached") ||
		!strings.Contains(out, "`bxctl approve`") {
		t.Fatalf("stderr %q", out)
	}

	// Pending while gatewayd is down, sent when it comes.
	c2, p2 := h.pending(readReq(t, "chat-2", 1, "/data/ask/b.md"))
	time.Sleep(100 * time.Millisecond)
	g = gatewaytest.Listen(t, h.cfg.Sockets.Gateway)
	req := g.Request(t)
	if req.Msg.Approval != p2.Approval {
		t.Fatalf("request %+v, want approval %d", req.Msg, p2.Approval)
	}
	req.Send(t, false, wire.ApprovalPosted{Post: postID})
	req.Send(t, true, wire.OwnerAnswer{Answer: wire.Approved, By: ownerID, Post: postID})
	if _, ok := c2.next(t).Msg.(wire.ResultResponse); !ok {
		t.Fatal("the call answered on Mattermost did not run")
	}
	g.Wait(t, 0, "broker_start", isStart)

	// gatewayd goes away while a call waits, and comes back.
	c3, p3 := h.pending(readReq(t, "chat-3", 1, "/data/ask/c.md"))
	first := g.Request(t)
	first.Send(t, false, wire.ApprovalPosted{Post: postID})
	eventually(t, "posted", func() bool { return strings.Count(h.stderr.String(), "is posted on Mattermost") == 2 })
	g.Close()
	eventually(t, "a second outage line", func() bool { return strings.Count(h.stderr.String(), unreachableLine) == 2 })
	time.Sleep(100 * time.Millisecond)
	if n := len(h.admin(wire.Approvals{}).(wire.ApprovalList).Items); n != 1 {
		t.Fatalf("%d pending while gatewayd is gone", n)
	}
	g = gatewaytest.Listen(t, h.cfg.Sockets.Gateway)
	again := g.Request(t)
	if !reflect.DeepEqual(again.Msg, first.Msg) || again.Msg.Approval != p3.Approval {
		t.Fatalf("sent again as %+v; first %+v", again.Msg, first.Msg)
	}
	again.Send(t, false, wire.ApprovalPosted{Post: postID})
	again.Send(t, true, wire.OwnerAnswer{Answer: wire.Refused, By: ownerID, Post: postID})
	if got := c3.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.ApprovalRefused}) {
		t.Fatalf("loopd got %+v", got)
	}
	if n := strings.Count(h.stderr.String(), unreachableLine); n != 2 {
		t.Fatalf("%d outage lines: %q", n, h.stderr.String())
	}
}

// TestGatewayInvalidAnswers: answers that are not an owner's well-formed
// answer write nothing and end nothing; each comes on a connection that
// brokerd then makes again. bxctl still approves, recorded as bxctl.
func TestGatewayInvalidAnswers(t *testing.T) {
	var g *gatewaytest.Gatewayd
	h := start(t, map[string]string{"a.toml": grantAsk}, withGatewayd(t, true, &g))
	c, p := h.pending(askReq(t))
	for i, bad := range []wire.Message{
		wire.OwnerAnswer{Answer: wire.Approved, By: "bxctl", Post: postID},
		wire.OwnerAnswer{Answer: wire.Approved, By: ownerID, Post: "not-a-post"},
		wire.OwnerAnswer{Answer: wire.Expired, By: ownerID, Post: postID},
		wire.OwnerAnswer{Answer: wire.Refused, By: ownerID, Post: postID, Reason: ptr(strings.Repeat("y", 100000))},
		wire.ApproveResult{Outcome: wire.OutcomeAllowed{}},
		wire.OK{},
	} {
		req := g.Request(t)
		req.Send(t, false, wire.ApprovalPosted{Post: postID})
		req.Send(t, true, bad)
		eventually(t, "the line", func() bool {
			return strings.Count(h.stderr.String(), "see docs/runbook.md#gatewayd-answer-invalid") == i+1
		})
	}
	g.Request(t) // sent once more: it still waits
	if l := h.admin(wire.Approvals{}).(wire.ApprovalList); len(l.Items) != 1 || l.Items[0].Approval != p.Approval {
		t.Fatalf("approvals %+v", l)
	}
	if n := len(h.records()); n != 1 || h.rt.Count() != 0 {
		t.Fatalf("%d records, %d runs", n, h.rt.Count())
	}
	h.admin(wire.Approve{Approval: p.Approval})
	c.next(t)
	if ev := h.events()[1].(wire.ApprovalEvent); *ev.By != "bxctl" || ev.Post != nil {
		t.Fatalf("record %+v", ev)
	}
}

// TestGatewayRestart: a restarted brokerd is a new instance, and its
// broker_start carries the log's last record.
func TestGatewayRestart(t *testing.T) {
	var g *gatewaytest.Gatewayd
	h := start(t, map[string]string{"a.toml": grantAuto}, withGatewayd(t, true, &g))
	g.Wait(t, 0, "broker_start", isStart)
	first := h.srv.gateway.Broker()
	h.call(readReq(t, "chat-1", 1, "/data/auto/x"))
	head := h.lastRecord()
	h.stop()
	var err error
	if h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr, Gateway: gatewayTiming}); err != nil {
		t.Fatal(err)
	}
	m, _ := g.Wait(t, 1, "the second broker_start", isStart)
	s := m.(wire.BrokerStart)
	if s.Broker == first || s.Broker != h.srv.gateway.Broker() || s.Head == nil || *s.Head != head {
		t.Fatalf("broker_start %+v; first instance %s; head %+v", s, first, head)
	}
}

// TestGatewayAuditHead: records written since the last head gatewayd took
// make an audit_head on the next tick, naming the log's last record.
func TestGatewayAuditHead(t *testing.T) {
	var g *gatewaytest.Gatewayd
	h := start(t, map[string]string{"a.toml": grantAuto}, withGatewayd(t, true, &g),
		func(o *Options) { o.Gateway.HeadEvery = 30 * time.Millisecond })
	g.Wait(t, 0, "broker_start", isStart)
	h.call(readReq(t, "chat-1", 1, "/data/auto/x"))
	want := h.lastRecord()
	g.Wait(t, 0, "audit_head", func(m wire.Message) bool { return m == wire.Message(want) })
}
