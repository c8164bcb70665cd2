package gateway

import (
	"reflect"
	"regexp"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

var instance = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestBrokerStart: broker_start comes first with a fresh instance id and the
// head (null for an empty log); a second client has another id.
func TestBrokerStart(t *testing.T) {
	r, g := newRig(t, true)
	m, _ := g.Wait(t, 0, "broker_start", func(m wire.Message) bool { _, ok := m.(wire.BrokerStart); return ok })
	if got := m.(wire.BrokerStart); got.Broker != r.c.Broker() || !instance.MatchString(got.Broker) || got.Head != nil {
		t.Fatalf("broker_start %+v; instance %q", got, r.c.Broker())
	}
	h := wire.AuditHead{Seq: 40, Hash: wire.Sha256([]byte("line 40"))}
	r2, g2 := newRig(t, true, func(o *Options) { o.Head = func() (wire.AuditHead, bool) { return h, true } })
	m, _ = g2.Wait(t, 0, "broker_start", func(m wire.Message) bool { _, ok := m.(wire.BrokerStart); return ok })
	got := m.(wire.BrokerStart)
	if got.Broker != r2.c.Broker() || got.Broker == r.c.Broker() || !instance.MatchString(got.Broker) {
		t.Fatalf("second instance %q, first %q", got.Broker, r.c.Broker())
	}
	if got.Head == nil || *got.Head != h {
		t.Fatalf("head %+v, want %+v", got.Head, h)
	}
	if len(r.logged()) != 0 {
		t.Fatalf("logged %q with gatewayd up", r.logged())
	}
}

// TestBrokerStartWaitsForGatewayd: gatewayd down at start: one line with
// the runbook pointer, however many tries; broker_start arrives, with the
// head as it is then, once gatewayd listens.
func TestBrokerStartWaitsForGatewayd(t *testing.T) {
	r, _ := newRig(t, false)
	h := r.setHead(7)
	r.waitLog("see docs/runbook.md#gatewayd-unreachable", 1)
	time.Sleep(150 * time.Millisecond) // several more tries
	if n := r.count("gatewayd-unreachable"); n != 1 {
		t.Fatalf("%d outage lines: %q", n, r.logged())
	}
	if l := r.logged()[0]; !regexp.MustCompile("gatewayd on .*gateway.sock cannot be reached.*`bxctl approve`").MatchString(l) {
		t.Fatalf("outage line %q", l)
	}
	g := gatewaytest.Listen(t, r.sock)
	m, _ := g.Wait(t, 0, "broker_start", func(m wire.Message) bool { _, ok := m.(wire.BrokerStart); return ok })
	if got := m.(wire.BrokerStart); got.Head == nil || *got.Head != h || got.Broker != r.c.Broker() {
		t.Fatalf("broker_start %+v", got)
	}
	r.waitLog("answers again", 1)
}

// TestApprovalRequestFields: every field of the pending approval, the
// digest of the exact call, the head when it became pending.
func TestApprovalRequestFields(t *testing.T) {
	r, g := newRig(t, true)
	h := r.setHead(41)
	p, _, _ := r.pending(41)
	req := g.Request(t)
	want := wire.ApprovalRequest{Broker: r.c.Broker(), Approval: 41, Session: p.Session, Call: 3, Tool: "shell",
		Arguments: p.Arguments, Grant: "shell-scratch", Taint: wire.Private, Created: p.Created, Expires: p.Expires,
		Digest: wire.CallDigest(p.Tool, p.Arguments, p.Grant, p.Taint), Head: h}
	if !reflect.DeepEqual(req.Msg, want) || !req.Env.Final || req.Env.V != wire.Version {
		t.Fatalf("request %+v\nwant    %+v", req.Env, want)
	}
	// The fixture's digest, from the same fields: the contract's example.
	if want.Digest.String() != "5ec286d95466162159950bdc7fff949a1f7caad381e234657157236593bea9ef" {
		t.Fatalf("digest %s differs from fixtures/wire/msg-approval_request.json", want.Digest)
	}
}

// TestOwnerAnswer: approval_posted is logged with the post; the owner's
// answer ends the approval in the table with who gave it and where.
func TestOwnerAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		msg    wire.OwnerAnswer
		answer wire.ApprovalAnswer
	}{
		{"approved", approved(), wire.Approved},
		{"refused with a reason", wire.OwnerAnswer{Answer: wire.Refused, By: ownerID, Post: postID, Reason: ptr("not on a Sunday")}, wire.Refused},
		{"refused without one", wire.OwnerAnswer{Answer: wire.Refused, By: ownerID, Post: postID}, wire.Refused},
		{"a reason of 500 bytes, accents and all", wire.OwnerAnswer{Answer: wire.Refused, By: ownerID, Post: postID,
			Reason: ptr(string(make500()))}, wire.Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, g := newRig(t, true)
			r.setHead(1)
			_, ans, _ := r.pending(41)
			req := g.Request(t)
			req.Send(t, false, wire.ApprovalPosted{Post: postID})
			r.waitLog("approval 41 is posted on Mattermost as post "+postID, 1)
			noAnswer(t, ans)
			req.Send(t, true, tc.msg)
			a := answer(t, ans)
			if a.Answer != tc.answer || a.Who.By != ownerID || a.Who.Post == nil || *a.Who.Post != postID {
				t.Fatalf("answer %+v", a)
			}
			if tc.answer == wire.Refused && !reflect.DeepEqual(a.Reason, tc.msg.Reason) {
				t.Fatalf("reason %v, want %v", a.Reason, tc.msg.Reason)
			}
			if !req.Closed(5 * time.Second) {
				t.Fatal("the request's connection stayed open after the answer")
			}
			r.waitLog("approval 41 "+tc.answer.String()+" on Mattermost by "+ownerID, 1)
		})
	}
}

// make500 is a printable reason of exactly 500 bytes with multi-byte
// characters in it.
func make500() []byte {
	b := []byte("é")
	for len(b) < 500 {
		b = append(b, 'x')
	}
	return b
}

// TestEnded: however it ended, the request's connection is closed first,
// then approval_ended carries exactly what the broker said.
func TestEnded(t *testing.T) {
	for _, e := range []wire.ApprovalEnded{
		{Approval: 41, End: wire.EndApproved, By: ptr("bxctl")},
		{Approval: 41, End: wire.EndApproved, By: ptr(ownerID), Post: ptr(postID), Denied: ptr(wire.TaintTooHigh)},
		{Approval: 41, End: wire.EndRefused, By: ptr("bxctl"), Reason: ptr("no"), Denied: ptr(wire.ApprovalRefused)},
		{Approval: 41, End: wire.EndExpired, Denied: ptr(wire.ApprovalExpired)},
		{Approval: 41, End: wire.EndAbandoned},
	} {
		t.Run(e.End.String(), func(t *testing.T) {
			r, g := newRig(t, true)
			r.setHead(1)
			_, _, ended := r.pending(41)
			req := g.Request(t)
			ended(e)
			ended(e) // a second call changes nothing
			if !req.Closed(5 * time.Second) {
				t.Fatal("the request's connection was not closed")
			}
			if got := g.Ended(t, 41); !reflect.DeepEqual(got, e) {
				t.Fatalf("approval_ended %+v, want %+v", got, e)
			}
			r.c.Close()
			n := 0
			for _, m := range g.Got() {
				if _, ok := m.(wire.ApprovalEnded); ok {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d approval_ended messages", n)
			}
		})
	}
}

// TestEndedNoSuchApproval: gatewayd that has no post for it (it
// restarted) is normal: one quiet line, no runbook pointer, no retry.
func TestEndedNoSuchApproval(t *testing.T) {
	r, g := newRig(t, true)
	g.SetReply(func(m wire.Message) wire.Message {
		if _, ok := m.(wire.ApprovalEnded); ok {
			return wire.WireError{Code: wire.NoSuchApproval, Detail: "no approval 41"}
		}
		return nil
	})
	r.setHead(1)
	_, _, ended := r.pending(41)
	g.Request(t)
	ended(wire.ApprovalEnded{Approval: 41, End: wire.EndAbandoned})
	r.waitLog("gatewayd has no post for approval 41", 1)
	r.c.Close()
	if r.count("see docs/runbook.md") != 0 || len(g.Got()) != 3 {
		t.Fatalf("log %q; gatewayd got %+v", r.logged(), g.Got())
	}
}

// TestEndedRetried: approval_ended is tried a few times while gatewayd
// refuses it, then given up; the post is only a display.
func TestEndedRetried(t *testing.T) {
	r, g := newRig(t, true)
	g.SetReply(func(m wire.Message) wire.Message {
		if _, ok := m.(wire.ApprovalEnded); ok {
			return wire.WireError{Code: wire.Internal, Detail: "mattermost is down"}
		}
		return nil
	})
	r.setHead(1)
	_, _, ended := r.pending(41)
	g.Request(t)
	ended(wire.ApprovalEnded{Approval: 41, End: wire.EndAbandoned})
	r.waitLog("mattermost is down", 1)
	r.c.Close()
	n := 0
	for _, m := range g.Got() {
		if _, ok := m.(wire.ApprovalEnded); ok {
			n++
		}
	}
	if n != endTries || r.count("gatewayd-unreachable") != 1 {
		t.Fatalf("%d tries, want %d; log %q", n, endTries, r.logged())
	}
}

// TestAnswerAfterEnd: an owner's answer to an approval that expired or was
// answered with bxctl meanwhile changes nothing, and says so.
func TestAnswerAfterEnd(t *testing.T) {
	r, g := newRig(t, true)
	r.setHead(1)
	_, ans, _ := r.pending(41)
	req := g.Request(t)
	if _, err := r.table.Approve(41, approvals.Bxctl, t0); err != nil {
		t.Fatal(err)
	}
	if a := answer(t, ans); a.Who != approvals.Bxctl {
		t.Fatalf("answer %+v", a)
	}
	req.Send(t, true, approved())
	r.waitLog("approval 41 had already ended when "+ownerID+" approved it", 1)
}
