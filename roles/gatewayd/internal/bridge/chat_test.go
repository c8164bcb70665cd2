package bridge

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/wire"
)

// replyIn waits for the bot's reply in thread root that holds want.
func (w *world) replyIn(root, want string) fakemm.Post {
	w.t.Helper()
	return w.waitPost("replying "+want, func(p fakemm.Post) bool {
		return p.RootID == root && p.UserID == w.bot.ID && strings.Contains(p.Message, want)
	})
}

// TestConversationIsASession: a root post starts a session (say with no
// session), whose id gatewayd stores for the thread, on disk; a reply in
// the thread continues it; another root post is another session.
func TestConversationIsASession(t *testing.T) {
	w := newWorld(t, nil)
	root := w.say(w.owner.ID, w.dm, "", "Hello")
	w.replyIn(root.ID, "You said: Hello")
	says := w.loop.waitSays(t, 1)
	if says[0].Session != nil || says[0].Text != "Hello" {
		t.Fatalf("first say %+v; want no session", says[0])
	}
	th, ok := w.st.Thread(root.ID)
	if !ok || th.Session.String() != "sess-1" || th.Owner != w.owner.ID || th.Channel != w.dm {
		t.Fatalf("thread %+v, %t; want session sess-1 of the owner's channel", th, ok)
	}
	// Written to the file: a state opened afresh has it.
	fresh, err := state.Open(filepath.Join(w.dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if th, ok := fresh.Thread(root.ID); !ok || th.Session.String() != "sess-1" {
		t.Fatalf("the state file has thread %+v, %t", th, ok)
	}
	w.say(w.owner.ID, w.dm, root.ID, "And again")
	w.replyIn(root.ID, "You said: And again")
	other := w.say(w.owner.ID, w.dm, "", "A new topic")
	w.replyIn(other.ID, "You said: A new topic")
	says = w.loop.waitSays(t, 3)
	if says[1].Session == nil || says[1].Session.String() != "sess-1" {
		t.Fatalf("the reply was said in %v; want sess-1", says[1].Session)
	}
	if says[2].Session != nil {
		t.Fatalf("a new root post was said in session %v; want a new one", says[2].Session)
	}
	// A restart keeps the mapping.
	w.restart()
	w.say(w.owner.ID, w.dm, root.ID, "After the restart")
	w.replyIn(root.ID, "You said: After the restart")
	if s := w.loop.waitSays(t, 4)[3].Session; s == nil || s.String() != "sess-1" {
		t.Fatalf("after a restart the thread was said in %v; want sess-1", s)
	}
	// The second owner's conversation is in their own channel.
	r2 := w.say(w.owner2.ID, w.dm2, "", "Hi from robin")
	if p := w.replyIn(r2.ID, "You said: Hi from robin"); p.ChannelID != w.dm2 {
		t.Fatalf("the reply is in channel %s, want %s", p.ChannelID, w.dm2)
	}
}

// TestThreadSaysOneAtATime: two messages in one thread are said one after
// the other (the second in the first one's session), never at once.
func TestThreadSaysOneAtATime(t *testing.T) {
	w := newWorld(t, nil)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before the fake loopd waits for its handlers
	w.loop.setTurn(func(s wire.Say, send func(wire.TurnEvent) error) {
		if s.Text == "first" {
			<-release
		}
		send(wire.TurnReply{Content: "done " + s.Text})
	})
	root := w.say(w.owner.ID, w.dm, "", "first")
	w.loop.waitSays(t, 1)
	w.say(w.owner.ID, w.dm, root.ID, "second")
	w.say(w.owner.ID, w.dm, root.ID, "third")
	time.Sleep(quiet)
	if n := w.loop.count(); n != 1 {
		t.Fatalf("loopd was told %d says while the first turn ran; want 1", n)
	}
	open()
	says := w.loop.waitSays(t, 3)
	w.replyIn(root.ID, "done third")
	for i, want := range []string{"first", "second", "third"} {
		if says[i].Text != want {
			t.Fatalf("say %d is %q, want %q", i, says[i].Text, want)
		}
	}
	if says[1].Session == nil || says[1].Session.String() != "sess-1" || says[2].Session == nil || says[2].Session.String() != "sess-1" {
		t.Fatalf("later says in %v and %v; want sess-1", says[1].Session, says[2].Session)
	}
	w.loop.mu.Lock()
	most := w.loop.maxActive
	w.loop.mu.Unlock()
	if most != 1 {
		t.Fatalf("%d turns ran at once; want 1", most)
	}
}

// TestReplyEditedAtMostOncePerEditEvery: a turn of many text events is one
// reply post, edited about once per EditEvery, whose last text holds the
// reply; tool calls show as one line each.
func TestReplyEditedAtMostOncePerEditEvery(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.EditEvery = 100 * time.Millisecond })
	const events = 120
	w.loop.setTurn(func(s wire.Say, send func(wire.TurnEvent) error) {
		send(wire.TurnToolCall{Call: 1, Tool: "notes_read", Arguments: "{}"})
		send(wire.TurnToolOutcome{Call: 1, Tool: "notes_read", Status: wire.ToolResult, Class: wire.Private})
		for i := range events {
			send(wire.TurnText{Content: fmt.Sprintf("thinking %d", i)})
			time.Sleep(5 * time.Millisecond)
		}
		send(wire.TurnReply{Content: "The final answer"})
	})
	start := time.Now()
	root := w.say(w.owner.ID, w.dm, "", "Think hard")
	p := w.replyIn(root.ID, "The final answer")
	took := time.Since(start)
	replies := 0
	for _, q := range w.botPosts(w.dm) {
		if q.RootID == root.ID {
			replies++
		}
	}
	if replies != 1 {
		t.Fatalf("%d reply posts; want one, edited", replies)
	}
	patches := w.mm.PatchCount(p.ID)
	t.Logf("%d text events over %v: the reply was edited %d times", events, took, patches)
	if most := int(took/(100*time.Millisecond)) + 2; patches > most || patches < 2 {
		t.Fatalf("%d edits in %v; want at least 2 and at most %d", patches, took, most)
	}
	if !strings.Contains(p.Message, "tool call 1 `notes_read`: ran (result private)") {
		t.Fatalf("the reply does not show the tool call:\n%s", p.Message)
	}
}

// TestLoopUnavailable: loopd cannot be reached; the reply says the turn
// failed, and the log names the runbook entry.
func TestLoopUnavailable(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.LoopSocket = filepath.Join(filepath.Dir(o.LoopSocket), "nobody.sock") })
	root := w.say(w.owner.ID, w.dm, "", "Anyone there?")
	w.replyIn(root.ID, "The turn failed")
	w.logs.waitFor(t, 1, "loopd is unreachable", "see docs/runbook.md#gatewayd-loop-unavailable")
	if _, ok := w.st.Thread(root.ID); ok {
		t.Fatal("a thread without a session was stored")
	}
}

// TestLoopFails: loopd's refusal and an answer cut short both end the turn
// with a failure in the reply.
func TestLoopFails(t *testing.T) {
	w := newWorld(t, nil)
	w.loop.setTurn(func(s wire.Say, send func(wire.TurnEvent) error) {
		if s.Text == "cut" {
			send(wire.TurnText{Content: "half an ans"})
			return // the connection closes without a final event
		}
		send(wire.TurnFailed{Message: "the model server is down"})
	})
	r1 := w.say(w.owner.ID, w.dm, "", "fail")
	w.replyIn(r1.ID, "the model server is down")
	r2 := w.say(w.owner.ID, w.dm, "", "cut")
	p := w.replyIn(r2.ID, "The turn failed")
	if !strings.Contains(p.Message, "loopd's answer ended early") || !strings.Contains(p.Message, "half an ans") {
		t.Fatalf("reply:\n%s", p.Message)
	}
}
