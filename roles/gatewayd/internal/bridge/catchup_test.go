package bridge

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/wire"
)

// TestCatchUp: posts and reactions made while the bridge was not listening
// are handled once, in order, when Connected runs; running it again
// handles nothing twice.
func TestCatchUp(t *testing.T) {
	w := newWorld(t, nil)
	conn, ap := w.ask(w.request(40))
	// Nothing below is given to the bridge as an event.
	root := w.mm.Post(w.owner.ID, w.dm, "", "first, while you were away")
	w.mm.React(w.owner.ID, ap, "+1")
	w.mm.Post(w.owner.ID, w.dm, root.ID, "second, in the same thread")
	w.mm.Post(w.owner.ID, w.dm, ap, "refuse: too late, the reaction came first")
	w.mm.Post(w.bot.ID, w.dm, "", "the bot's own post")
	time.Sleep(quiet)
	if n := w.loop.count(); n != 0 {
		t.Fatalf("loopd was told %d says before Connected", n)
	}

	w.b.Connected(w.ctx)
	a := answer(t, conn)
	if a.Answer != wire.Approved || a.By != w.owner.ID || a.Post != ap {
		t.Fatalf("answer %+v; want the reaction, which came before the reply", a)
	}
	w.logs.waitFor(t, 1, "ignored reply", "the approval already has its answer")
	says := w.loop.waitSays(t, 2)
	if says[0].Text != "first, while you were away" || says[1].Text != "second, in the same thread" {
		t.Fatalf("said %q then %q", says[0].Text, says[1].Text)
	}
	if says[0].Session != nil || says[1].Session == nil || says[1].Session.String() != "sess-1" {
		t.Fatalf("sessions %v, %v", says[0].Session, says[1].Session)
	}
	w.replyIn(root.ID, "You said: second")

	logged := w.logs.count("")
	w.b.Connected(w.ctx)
	w.b.Connected(w.ctx)
	time.Sleep(quiet)
	if n := w.loop.count(); n != 2 {
		t.Fatalf("after catching up again loopd was told %d says; want 2", n)
	}
	for _, sub := range []string{"approval 40: approved", "the approval already has its answer"} {
		if n := w.logs.count(sub); n != 1 {
			t.Fatalf("%d log lines with %q; want 1", n, sub)
		}
	}
	if n := w.logs.count(""); n != logged {
		t.Fatalf("catching up again logged %d more lines", n-logged)
	}
	// After a restart too: the cursor is in the state file.
	w.restart()
	w.b.Connected(w.ctx)
	time.Sleep(quiet)
	if n := w.loop.count(); n != 2 {
		t.Fatalf("after a restart loopd was told %d says; want 2", n)
	}
}

// TestCatchUpSkipsHistory: what was written before gatewayd first started
// is not handled.
func TestCatchUpSkipsHistory(t *testing.T) {
	w := newWorld(t, nil)
	w.stop()
	w.mm.Post(w.owner.ID, w.dm, "", "an old message")
	// A state file of its own: gatewayd's first start.
	w.stateName = "first.json"
	w.start()
	w.b.Connected(w.ctx)
	time.Sleep(quiet)
	if n := w.loop.count(); n != 0 {
		t.Fatalf("loopd was told %d says of the channel's history", n)
	}
}

var headRE = regexp.MustCompile("`bxctl audit verify --head ([^`]*)`")

// checkHead finds the head in a post, in the form bxctl audit verify
// --head takes: SEQ:HASH, SEQ in canonical decimal, HASH 64 lowercase hex.
func checkHead(t *testing.T, p fakemm.Post, h wire.AuditHead) {
	t.Helper()
	m := headRE.FindStringSubmatch(p.Message)
	if m == nil {
		t.Fatalf("no `bxctl audit verify --head` in:\n%s", p.Message)
	}
	if !regexp.MustCompile(`^(0|[1-9][0-9]*):[0-9a-f]{64}$`).MatchString(m[1]) {
		t.Fatalf("the head %q is not SEQ:HASH", m[1])
	}
	if want := strconv.FormatUint(h.Seq, 10) + ":" + h.Hash.String(); m[1] != want {
		t.Fatalf("the head %q, want %q", m[1], want)
	}
}

// TestAuditHeadPosted: audit_head and broker_start with a head post it in
// the first owner's channel, in the form bxctl audit verify --head takes;
// a broker_start without one posts nothing.
func TestAuditHeadPosted(t *testing.T) {
	w := newWorld(t, nil)
	h := wire.AuditHead{Seq: 1234, Hash: wire.Sha256([]byte("record 1234"))}
	if m := w.call(h); m != (wire.OK{}) {
		t.Fatalf("audit_head: %#v", m)
	}
	posts := w.botPosts(w.dm)
	if len(posts) != 1 {
		t.Fatalf("%d posts; want the head's", len(posts))
	}
	checkHead(t, posts[0], h)
	if m := w.call(wire.BrokerStart{Broker: brokerA}); m != (wire.OK{}) {
		t.Fatalf("broker_start: %#v", m)
	}
	zero := wire.AuditHead{Seq: 0, Hash: wire.Sha256(nil)}
	if m := w.call(wire.BrokerStart{Broker: brokerB, Head: &zero}); m != (wire.OK{}) {
		t.Fatalf("broker_start: %#v", m)
	}
	posts = w.botPosts(w.dm)
	if len(posts) != 2 {
		t.Fatalf("%d posts; want the two heads", len(posts))
	}
	if !strings.Contains(posts[1].Message, "brokerd started") {
		t.Fatalf("the start's post:\n%s", posts[1].Message)
	}
	checkHead(t, posts[1], zero)
	if n := len(w.mm.Posts(w.dm2)); n != 0 {
		t.Fatalf("%d posts in the second owner's channel", n)
	}
	// Mattermost down: audit_head is an error, so brokerd tries again.
	w.mm.SetDown(true)
	defer w.mm.SetDown(false)
	if m := w.call(h); !isError(m, wire.Internal) {
		t.Fatalf("audit_head while Mattermost is down: %#v", m)
	}
}
