package bridge

import (
	"net"
	"strings"
	"testing"

	"boxmaker/internal/fakemm"
	"boxmaker/wire"
)

// TestReattachHeldAnswer: brokerd's connection drops after approval_posted;
// the owner answers meanwhile; brokerd asks again with the same instance id
// and gets the same post (no second one) and the held answer at once.
func TestReattachHeldAnswer(t *testing.T) {
	w := newWorld(t, nil)
	req := w.request(20)
	conn, ap := w.ask(req)
	conn.Close()
	w.react(w.owner.ID, ap, "white_check_mark")
	w.logs.waitFor(t, 1, "approval 20: approved by kyle")
	again, post := w.ask(req)
	if post != ap {
		t.Fatalf("asked again: post %s, want the same post %s", post, ap)
	}
	a := answer(t, again)
	if a.Answer != wire.Approved || a.By != w.owner.ID || a.Post != ap {
		t.Fatalf("held answer %+v", a)
	}
	if n := len(w.botPosts(w.dm)); n != 1 {
		t.Fatalf("%d bot posts; want one approval post", n)
	}
	// Delivered once: asked a third time, nothing more comes.
	third, _ := w.ask(req)
	noAnswer(t, third)
}

// TestReattachAnswerWhileWaiting: a connection that asks again before the
// answer, while the first connection is gone, gets the answer live.
func TestReattachAnswerWhileWaiting(t *testing.T) {
	w := newWorld(t, nil)
	req := w.request(21)
	conn, ap := w.ask(req)
	conn.Close()
	again, post := w.ask(req)
	if post != ap {
		t.Fatalf("post %s, want %s", post, ap)
	}
	w.react(w.owner.ID, ap, "-1")
	if a := answer(t, again); a.Answer != wire.Refused || a.Post != ap {
		t.Fatalf("answer %+v", a)
	}
}

// TestReattachAfterGatewaydRestart: an answer given while gatewayd was
// down (its in-memory table lost) is found in the post's reactions when
// brokerd asks again, and the post is reused.
func TestReattachAfterGatewaydRestart(t *testing.T) {
	w := newWorld(t, nil)
	req := w.request(22)
	_, ap := w.ask(req)
	w.stop()
	w.mm.React(w.owner.ID, ap, "+1") // nobody listening
	w.start()
	again, post := w.ask(req)
	if post != ap {
		t.Fatalf("post %s, want the one from before the restart, %s", post, ap)
	}
	if a := answer(t, again); a.Answer != wire.Approved || a.By != w.owner.ID || a.Post != ap {
		t.Fatalf("answer %+v", a)
	}
	if n := len(w.botPosts(w.dm)); n != 1 {
		t.Fatalf("%d bot posts; want one", n)
	}
}

// TestBrokerdRestarted: a broker_start with a new instance id edits every
// waiting approval of the old one to say brokerd does not know it; an
// answer after that is logged and not delivered, and an answer held for
// the old instance is logged as not counted.
func TestBrokerdRestarted(t *testing.T) {
	w := newWorld(t, nil)
	conn, ap := w.ask(w.request(23))
	held, heldPost := w.ask(w.request(24))
	held.Close()
	w.react(w.owner.ID, heldPost, "+1")
	w.logs.waitFor(t, 1, "approval 24: approved")
	ended, endedPost := w.ask(w.request(25))
	ended.Close()
	w.call(wire.ApprovalEnded{Approval: 25, End: wire.EndExpired})
	w.waitPost("25 expired", func(p fakemm.Post) bool { return p.ID == endedPost && strings.Contains(p.Message, "Expired") })

	if m := w.call(wire.BrokerStart{Broker: brokerB}); m != (wire.OK{}) {
		t.Fatalf("broker_start: %#v", m)
	}
	for _, post := range []string{ap, heldPost} {
		w.waitPost("edited to unknown", func(p fakemm.Post) bool {
			return p.ID == post && strings.Contains(p.Message, "Unknown to brokerd")
		})
	}
	w.logs.waitFor(t, 1, "approval 24: the answer given on post "+heldPost+" was not counted")
	for _, p := range w.mm.Posts(w.dm) {
		if p.ID == endedPost && strings.Contains(p.Message, "Unknown") {
			t.Fatalf("an approval that had ended was edited again: %s", p.Message)
		}
	}
	w.react(w.owner.ID, ap, "+1")
	w.logs.waitFor(t, 1, "ignored reaction +1", "approval post "+ap)
	noAnswer(t, conn)
	// The same broker_start again changes nothing more.
	patches := w.mm.PatchCount(ap)
	w.call(wire.BrokerStart{Broker: brokerB})
	if got := w.mm.PatchCount(ap); got != patches {
		t.Fatalf("the post was edited again (%d patches, then %d)", patches, got)
	}
}

// TestApprovalRequestRefused: a request whose broker is not an instance id,
// whose digest is not the call's, or that has expired is answered with an
// error, and nothing is posted; approval_ended for an approval gatewayd
// never posted is no_such_approval; any other kind is forbidden.
func TestApprovalRequestRefused(t *testing.T) {
	w := newWorld(t, nil)
	cases := []struct {
		name string
		edit func(*wire.ApprovalRequest)
		code wire.ErrorCode
	}{
		{"broker too short", func(r *wire.ApprovalRequest) { r.Broker = "0123" }, wire.BadMessage},
		{"broker in capitals", func(r *wire.ApprovalRequest) { r.Broker = strings.ToUpper(brokerA) }, wire.BadMessage},
		{"wrong digest", func(r *wire.ApprovalRequest) { r.Digest = wire.Sha256([]byte("another call")) }, wire.BadMessage},
		{"digest of other arguments", func(r *wire.ApprovalRequest) { r.Arguments = `{"command":"rm -rf /"}` }, wire.BadMessage},
		{"already expired", func(r *wire.ApprovalRequest) { r.Expires = wire.TimestampOf(w.clock.Now()) }, wire.NoSuchApproval},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := w.request(30)
			c.edit(&req)
			m := w.call(req)
			if e, ok := m.(wire.WireError); !ok || e.Code != c.code {
				t.Fatalf("answered %#v; want error %s", m, c.code)
			}
			w.logs.waitFor(t, 1, "refused approval request 30")
		})
	}
	if n := len(w.mm.Posts(w.dm)) + len(w.mm.Posts(w.dm2)); n != 0 {
		t.Fatalf("%d posts; want none", n)
	}
	if m := w.call(wire.ApprovalEnded{Approval: 999, End: wire.EndExpired}); !isError(m, wire.NoSuchApproval) {
		t.Fatalf("approval_ended for no approval: %#v", m)
	}
	sess, _ := wire.NewSessionID("s")
	for _, m := range []wire.Message{wire.Say{Session: &sess, Text: "hello"}, wire.OwnerAnswer{Answer: wire.Approved}, wire.OK{}} {
		if got := w.call(m); !isError(got, wire.Forbidden) {
			t.Fatalf("%s: %#v; want forbidden", m.Kind(), got)
		}
	}
	// A request that is not final is a bad message; a frame that is not
	// an envelope is a bad frame or message; neither posts anything.
	c, err := net.Dial("unix", w.gatewayPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wire.WriteEnvelope(c, wire.Envelope{V: wire.Version, ID: 1, Msg: wire.AuditHead{Seq: 1}})
	if env, err := read(c, wait); err != nil || !isError(env.Msg, wire.BadMessage) {
		t.Fatalf("a request that is not final: %#v, %v", env.Msg, err)
	}
	c2, err := net.Dial("unix", w.gatewayPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	wire.WriteFrame(c2, []byte(`{"v":1,"id":1,"final":true,"msg":{"kind":"audit_head","body":{"seq":1,"hash":"00"}}}`))
	if env, err := read(c2, wait); err != nil || !isError(env.Msg, wire.BadMessage) {
		t.Fatalf("a request that does not decode: %#v, %v", env.Msg, err)
	}
	if n := len(w.mm.Posts(w.dm)) + len(w.mm.Posts(w.dm2)); n != 0 {
		t.Fatalf("%d posts; want none", n)
	}
}

func isError(m wire.Message, code wire.ErrorCode) bool {
	e, ok := m.(wire.WireError)
	return ok && e.Code == code
}
