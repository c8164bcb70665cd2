package bridge

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/wire"
)

// TestReactionsElsewhereAreNotKept: reactions on posts that are not
// approvals (any channel the bot is in: anyone can add a bot to a channel
// and react there all day) leave nothing in memory. (Every one was kept,
// for the whole run.)
func TestReactionsElsewhereAreNotKept(t *testing.T) {
	w := newWorld(t, nil)
	post := w.say(w.owner.ID, w.dm, "", "hello")
	w.replyIn(post.ID, "You said: hello")
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const n = 50000
	for i := range n {
		w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.strngr.ID, PostID: post.ID,
			EmojiName: "smile", CreateAt: int64(1e12 + i)}})
	}
	after := heap()
	if grew := int64(after) - int64(before); grew > 2<<20 {
		t.Fatalf("%d reactions on a post that is not an approval left %d bytes in memory", n, grew)
	}
}

// countingMM counts Reactions calls.
type countingMM struct {
	Mattermost
	reactions atomic.Int64
}

func (c *countingMM) Reactions(ctx context.Context, post string) ([]mm.Reaction, error) {
	c.reactions.Add(1)
	return c.Mattermost.Reactions(ctx, post)
}

// TestOldApprovalsAreDropped: approvals that ended or expired a day ago
// leave gatewayd's table (as they leave the state file), and an expired one
// is not caught up on. (The table kept every approval of the run, and each
// reconnection read the reactions of every expired one that brokerd had
// not said ended.)
func TestOldApprovalsAreDropped(t *testing.T) {
	var c *countingMM
	w := newWorld(t, func(o *Options) {
		c = &countingMM{Mattermost: o.MM}
		o.MM = c
	})
	w.ask(w.request(60))
	w.ask(w.request(61))
	w.call(wire.ApprovalEnded{Approval: 61, End: wire.EndAbandoned})
	w.clock.advance(16 * time.Minute)
	c.reactions.Store(0)
	w.b.Connected(w.ctx)
	if n := c.reactions.Load(); n != 0 {
		t.Fatalf("catching up read the reactions of %d approval posts; want none (one expired, one ended)", n)
	}
	w.clock.advance(24 * time.Hour)
	w.ask(w.request(62))
	r := w.b.approvals
	r.mu.Lock()
	ids, posts := len(r.byID), len(r.byPost)
	r.mu.Unlock()
	if ids != 1 || posts != 1 {
		t.Fatalf("the table holds %d approvals (%d posts); want only the new one", ids, posts)
	}
}
