package bridge

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/wire"
)

// An owner's answer counts once, from the owner, once written: these are
// the attacks on that rule (docs/decisions.md, "An owner's answer counts
// once, from the owner, once written").

// TestApprovalAnsweredOnce: gatewayd restarts while an answer is held for
// brokerd (its connection dropped). brokerd asking again gets that answer,
// once: not a later answer gatewayd had ignored, and not nothing. (The
// answer lived in memory only: after a restart the catch-up counted the
// post's first reaction, a second answer the owner had given after a
// refusal by reply, and an answer by reply was lost.)
func TestApprovalAnsweredOnce(t *testing.T) {
	w := newWorld(t, nil)
	refused, approved := w.request(60), w.request(61)
	c1, ap := w.ask(refused)
	c1.Close()
	c2, ap2 := w.ask(approved)
	c2.Close()
	w.say(w.owner.ID, w.dm, ap, "refuse: not now")
	w.logs.waitFor(t, 1, "approval 60: refused by kyle")
	w.react(w.owner.ID, ap, "+1")
	w.logs.waitFor(t, 1, "ignored reaction +1", "the approval already has its answer")
	w.say(w.owner.ID, w.dm, ap2, "approve")
	w.logs.waitFor(t, 1, "approval 61: approved by kyle")

	w.restart()
	w.b.Connected(w.ctx) // the catch-up reads the waiting posts' reactions again
	for _, c := range []struct {
		req  wire.ApprovalRequest
		post string
		want wire.ApprovalAnswer
	}{{refused, ap, wire.Refused}, {approved, ap2, wire.Approved}} {
		again, post := w.ask(c.req)
		if post != c.post {
			t.Fatalf("approval %d: post %s, want %s", c.req.Approval, post, c.post)
		}
		a := answer(t, again)
		if a.Answer != c.want || a.By != w.owner.ID || a.Post != c.post {
			t.Fatalf("approval %d after a restart: %+v; want %s by %s", c.req.Approval, a, c.want, w.owner.ID)
		}
		if c.want == wire.Refused && (a.Reason == nil || *a.Reason != "not now") {
			t.Fatalf("approval %d: reason %v; want the owner's", c.req.Approval, a.Reason)
		}
		third, _ := w.ask(c.req)
		noAnswer(t, third)
	}
	if n := len(w.botPosts(w.dm)); n != 2 {
		t.Fatalf("%d bot posts; want the two approval posts", n)
	}
}

// TestAnswersAtOnce: an owner's reactions and replies, all answers, arrive
// at once; exactly one counts, it is the one delivered, and after a
// restart brokerd asking again gets that same one. Run under -race.
func TestAnswersAtOnce(t *testing.T) {
	w := newWorld(t, nil)
	for round := range 6 {
		id := uint64(200 + round)
		req := w.request(id)
		conn, ap := w.ask(req)
		var wg sync.WaitGroup
		for _, e := range []string{"+1", "-1", "white_check_mark", "x"} {
			wg.Go(func() { w.react(w.owner.ID, ap, e) })
		}
		for _, text := range []string{"approve", "refuse: no", "Approve", "refuse"} {
			wg.Go(func() { w.say(w.owner.ID, w.dm, ap, text) })
		}
		wg.Wait()
		a := answer(t, conn)
		conn.Close()
		prefix := "approval " + strconv.FormatUint(id, 10) + ": "
		if n := w.logs.count(prefix, " by kyle"); n != 1 {
			t.Fatalf("round %d: %d answers counted; want one", round, n)
		}
		if n := w.logs.count("on approval post "+ap, "the approval already has its answer"); n != 7 {
			t.Fatalf("round %d: %d answers ignored as second; want 7", round, n)
		}
		w.restart()
		w.b.Connected(w.ctx)
		again, _ := w.ask(req)
		b := answer(t, again)
		if b.Answer != a.Answer || b.By != a.By || b.Post != a.Post || (a.Reason == nil) != (b.Reason == nil) {
			t.Fatalf("round %d: delivered %+v, after a restart %+v", round, a, b)
		}
		again.Close()
	}
}

// TestAnswerNotWrittenIsNotCounted: an answer that cannot be written to
// the state file does not count: it is not delivered, the owner is told
// in the approval's thread and the log says why; the owner's next answer,
// once the file can be written, is the one that counts, and the one a
// restart keeps. (It counted from memory, and a restart then counted
// another.)
func TestAnswerNotWrittenIsNotCounted(t *testing.T) {
	w := newWorld(t, nil)
	req := w.request(62)
	conn, ap := w.ask(req)
	// A directory that is not empty where the temporary file goes: every
	// write of the state file fails.
	block := filepath.Join(w.dir, w.stateName+".tmp")
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	w.react(w.owner.ID, ap, "+1")
	noAnswer(t, conn)
	w.logs.waitFor(t, 1, "approval 62: the reaction +1 by kyle", "was not counted", "see docs/runbook.md#gatewayd-answer-not-counted")
	w.waitPost("saying the answer was not counted", func(p fakemm.Post) bool {
		return p.RootID == ap && p.UserID == w.bot.ID && strings.Contains(p.Message, "not counted")
	})
	os.RemoveAll(block)
	w.say(w.owner.ID, w.dm, ap, "refuse: later")
	if a := answer(t, conn); a.Answer != wire.Refused || a.By != w.owner.ID {
		t.Fatalf("answer %+v; want the refusal written after", a)
	}
	w.restart()
	w.b.Connected(w.ctx)
	again, _ := w.ask(req)
	if a := answer(t, again); a.Answer != wire.Refused || a.Reason == nil || *a.Reason != "later" {
		t.Fatalf("after a restart: %+v; want the refusal, never the answer not counted", a)
	}
}

// TestEndedOrExpiredAfterRestart: after a restart, a post or reaction
// replayed (or given late) on an approval that ended or expired delivers
// nothing, and a request for the expired one is refused.
func TestEndedOrExpiredAfterRestart(t *testing.T) {
	w := newWorld(t, nil)
	answered, byBxctl, expired := w.request(63), w.request(64), w.request(65)
	c1, ap1 := w.ask(answered)
	at := w.now()
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap1, EmojiName: "+1", CreateAt: at}})
	if a := answer(t, c1); a.Answer != wire.Approved {
		t.Fatalf("answer %+v", a)
	}
	by, post := w.owner.ID, ap1
	w.call(wire.ApprovalEnded{Approval: 63, End: wire.EndApproved, By: &by, Post: &post})
	c2, ap2 := w.ask(byBxctl)
	bx := "bxctl"
	w.call(wire.ApprovalEnded{Approval: 64, End: wire.EndRefused, By: &bx})
	c2.Close()
	reply := w.mm.Post(w.owner.ID, w.dm, ap2, "approve")
	c3, ap3 := w.ask(expired)
	c3.Close()
	w.clock.advance(15*time.Minute + time.Second)

	w.restart()
	w.b.Connected(w.ctx)
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap1, EmojiName: "+1", CreateAt: at}})
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap1, EmojiName: "-1", CreateAt: w.now()}})
	w.posted(reply)
	w.say(w.owner.ID, w.dm, ap2, "refuse")
	w.react(w.owner.ID, ap3, "+1")
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap3, EmojiName: "x", CreateAt: at}})
	w.logs.waitFor(t, 2, "on approval post "+ap1, "no live approval")
	w.logs.waitFor(t, 1, "ignored reply", "on approval post "+ap2, "no live approval")
	w.logs.waitFor(t, 2, "on approval post "+ap3, "expired")
	if m := w.call(expired); !isError(m, wire.NoSuchApproval) {
		t.Fatalf("the expired approval asked again: %#v", m)
	}
	for _, id := range []string{"63", "64", "65"} {
		if n := w.logs.count("approval "+id+": ", " by kyle"); n > 1 || id != "63" && n != 0 {
			t.Fatalf("approval %s counted %d answers", id, n)
		}
	}
	if n := w.loop.count(); n != 0 {
		t.Fatalf("loopd was told %d says", n)
	}
}

// postGate holds CreatePost calls while a gate is set.
type postGate struct {
	Mattermost
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{}
}

func (g *postGate) hold(gate chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = gate
}

func (g *postGate) CreatePost(ctx context.Context, channel, root, message string) (mm.Post, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.entered <- struct{}{}
		<-gate
	}
	return g.Mattermost.CreatePost(ctx, channel, root, message)
}

// TestApprovalAskedTwiceAtOnce: brokerd asks again for an approval while
// gatewayd is still posting it (a retry on a slow Mattermost): both get the
// one post. (Each made its own; the first post then showed an approval
// that no answer could reach and no end would edit.)
func TestApprovalAskedTwiceAtOnce(t *testing.T) {
	var g *postGate
	w := newWorld(t, func(o *Options) {
		g = &postGate{Mattermost: o.MM, entered: make(chan struct{}, 2)}
		o.MM = g
	})
	gate := make(chan struct{})
	g.hold(gate)
	req := w.request(66)
	c1 := w.send(req)
	<-g.entered // the first request is posting
	c2 := w.send(req)
	select {
	case <-g.entered: // the second is posting too
	case <-time.After(quiet):
	}
	g.hold(nil)
	close(gate)
	var posts []string
	for _, c := range []net.Conn{c1, c2} {
		env, err := read(c, wait)
		p, ok := env.Msg.(wire.ApprovalPosted)
		if err != nil || !ok {
			t.Fatalf("asked: %#v, %v", env.Msg, err)
		}
		posts = append(posts, p.Post)
	}
	if n := len(w.botPosts(w.dm)); n != 1 || posts[0] != posts[1] {
		t.Fatalf("%d approval posts (%v); want one, the same for both requests", n, posts)
	}
}

// BenchmarkAnswer: an owner's reaction, given as its event, to the answer
// read on brokerd's connection (now with the state file written and synced
// in between).
func BenchmarkAnswer(b *testing.B) {
	w := newWorld(b, nil)
	id := uint64(1)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		id++
		conn, ap := w.ask(w.request(id))
		b.StartTimer()
		w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap, EmojiName: "+1", CreateAt: w.now()}})
		answer(b, conn)
		b.StopTimer()
		conn.Close()
		b.StartTimer()
	}
}
