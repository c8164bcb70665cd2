package bridge

import (
	"path/filepath"
	"testing"
	"time"

	"boxmaker/wire"
)

// TestRepliesToTheBotsPostsAreNotChat: a reply on an approval post that
// gatewayd no longer holds (a day after it ended), or on the audit head's
// post, is an answer to the bot, never a message to the model: it is
// ignored and logged. (Any reply in a thread gatewayd did not know became a
// say on loop.sock, rooted at the bot's post.)
func TestRepliesToTheBotsPostsAreNotChat(t *testing.T) {
	w := newWorld(t, nil)
	_, old := w.ask(w.request(70))
	w.call(wire.ApprovalEnded{Approval: 70, End: wire.EndExpired})
	w.clock.advance(15*time.Minute + 25*time.Hour)
	w.ask(w.request(71)) // writing it drops approval 70 from the state file
	if _, ok := w.st.ApprovalByPost(old); ok {
		t.Fatal("the state file still holds approval 70")
	}
	w.call(wire.AuditHead{Seq: 5, Hash: wire.Sha256(nil)})
	var head string
	for _, p := range w.botPosts(w.dm) {
		if headRE.MatchString(p.Message) {
			head = p.ID
		}
	}
	w.say(w.owner.ID, w.dm, old, "approve")
	w.logs.waitFor(t, 1, "ignored post", "a reply in a thread that is not a conversation")
	w.say(w.owner.ID, w.dm, head, "what is this?")
	w.logs.waitFor(t, 2, "ignored post", "a reply in a thread that is not a conversation")
	time.Sleep(quiet)
	if n := w.loop.count(); n != 0 {
		t.Fatalf("loopd was told %d says: %+v", n, w.loop.waitSays(t, n))
	}
}

// TestReplyInAThreadWithoutASession: the owner's thread whose first turn
// never reached loopd (so no session is stored) still goes on as a
// conversation.
func TestReplyInAThreadWithoutASession(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.LoopSocket = filepath.Join(filepath.Dir(o.LoopSocket), "nobody.sock") })
	root := w.say(w.owner.ID, w.dm, "", "Anyone there?")
	w.replyIn(root.ID, "The turn failed")
	w.opts = nil // loopd is back
	w.restart()  // no worker left for the thread, and none in the state file
	w.say(w.owner.ID, w.dm, root.ID, "Now?")
	w.replyIn(root.ID, "You said: Now?")
	if s := w.loop.waitSays(t, 1)[0]; s.Session != nil || s.Text != "Now?" {
		t.Fatalf("said %+v; want a new session", s)
	}
	if th, ok := w.st.Thread(root.ID); !ok || th.Session.String() != "sess-1" {
		t.Fatalf("thread %+v, %t", th, ok)
	}
}
