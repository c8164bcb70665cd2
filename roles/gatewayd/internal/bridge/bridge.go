// Package bridge is gatewayd's core: what the owner writes in a direct
// channel with the bot becomes a say on loop.sock, the turn's events become
// one reply in the thread, and approvals that brokerd sends on gateway.sock
// are posted and answered by an owner's reaction or reply. It only relays:
// it decides nothing, and the only answers it passes to brokerd are an
// owner's, on the approval's own post.
package bridge

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// Mattermost is what the bridge needs of the server (mm.Client).
type Mattermost interface {
	CreatePost(ctx context.Context, channelID, rootID, message string) (mm.Post, error)
	PatchPost(ctx context.Context, postID, message string) (mm.Post, error)
	PostsSince(ctx context.Context, channelID string, since int64) ([]mm.Post, error)
	Thread(ctx context.Context, postID string) ([]mm.Post, error)
	Reactions(ctx context.Context, postID string) ([]mm.Reaction, error)
}

// Owner is one of the owners: a Mattermost user and the bot's direct
// channel with them.
type Owner struct {
	ID, Username, Channel string
}

// Options are set once, before Run.
type Options struct {
	MM         Mattermost
	Bot        mm.User
	Owners     []Owner // the first is who gets approvals of sessions not from Mattermost
	State      *state.State
	LoopSocket string
	Log        func(string)
	Now        func() time.Time
	// EditEvery spaces the edits of a turn's reply (default one second).
	EditEvery time.Duration
	// MaxConnections bounds the connections served at once on
	// gateway.sock (default DefaultMaxConnections).
	MaxConnections int
}

// DefaultMaxConnections is far above what brokerd needs (one connection
// per waiting approval, and a few short ones), and bounds what a brokerd
// gone wrong can make gatewayd hold: each connection is goroutines, a
// descriptor and, for a request, a post on Mattermost.
const DefaultMaxConnections = 1024

// Bridge is the running core. It is an mm.Handler for the WebSocket, and
// serves gateway.sock (ServeGateway).
type Bridge struct {
	o         Options
	owners    map[string]Owner // by user id
	byChannel map[string]Owner // by direct channel id
	approvals *registry

	mu      sync.Mutex
	workers map[string]*worker // by thread root
	ignored map[string]int
	down    bool // the WebSocket is down (logged once per outage)

	ctx context.Context
	wg  sync.WaitGroup
}

// New makes a Bridge. Run must be called before it handles anything.
func New(o Options) *Bridge {
	if o.EditEvery == 0 {
		o.EditEvery = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	b := &Bridge{o: o, owners: map[string]Owner{}, byChannel: map[string]Owner{},
		workers: map[string]*worker{}, ignored: map[string]int{}}
	for _, ow := range o.Owners {
		b.owners[ow.ID] = ow
		b.byChannel[ow.Channel] = ow
	}
	b.approvals = newRegistry(b)
	return b
}

// Start gives the bridge the context its goroutines live in, and starts
// the cursor of every channel read for the first time here: what is
// written from now on is handled, even if the WebSocket is down until
// later; the channel's history is not.
func (b *Bridge) Start(ctx context.Context) error {
	b.ctx = ctx
	now := b.o.Now().UnixMilli()
	for _, ow := range b.o.Owners {
		if err := b.o.State.StartCursor(ow.Channel, now); err != nil {
			return err
		}
	}
	return nil
}

// Wait returns once every goroutine the bridge started has ended (after
// the context given to Start is done).
func (b *Bridge) Wait() { b.wg.Wait() }

func (b *Bridge) log(format string, args ...any) { b.o.Log(fmt.Sprintf("gatewayd: "+format, args...)) }

// Connected catches up on what was written while the WebSocket was down:
// the served channels' posts since their cursors, and the reactions on
// every approval post still waiting, handled in the order they were made.
func (b *Bridge) Connected(ctx context.Context) {
	b.mu.Lock()
	if b.down {
		b.log("the Mattermost WebSocket is connected again; catching up")
	}
	b.down = false
	b.mu.Unlock()
	type item struct {
		at   int64
		post *mm.Post
		r    *mm.Reaction
	}
	var items []item
	for _, ow := range b.o.Owners {
		c, ok := b.o.State.Cursor(ow.Channel)
		if !ok {
			continue // Start made one for every owner
		}
		posts, err := b.o.MM.PostsSince(ctx, ow.Channel, c.At-state.Overlap)
		if err != nil {
			b.log("catching up on channel %s: %v", ow.Channel, err)
			continue
		}
		for i := range posts {
			items = append(items, item{at: posts[i].CreateAt, post: &posts[i]})
		}
	}
	for _, post := range b.approvals.waitingPosts(wire.TimestampOf(b.o.Now())) {
		rs, err := b.o.MM.Reactions(ctx, post)
		if err != nil {
			b.log("catching up on the reactions of approval post %s: %v", post, err)
			continue
		}
		for i := range rs {
			items = append(items, item{at: rs[i].CreateAt, r: &rs[i]})
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at < items[j].at })
	for _, it := range items {
		if it.post != nil {
			b.post(*it.post)
		} else {
			b.reaction(*it.r)
		}
	}
}

// Disconnected is told every time the WebSocket ends or a connect fails.
func (b *Bridge) Disconnected(err error) {
	b.mu.Lock()
	first := !b.down
	b.down = true
	b.mu.Unlock()
	if first {
		b.log("the Mattermost WebSocket is down (%v); retrying, and catching up once it is back; %s", err, runbook.See("mattermost-unreachable"))
	}
}

// Event handles one event from the WebSocket, in order.
func (b *Bridge) Event(ctx context.Context, ev mm.Event) {
	switch e := ev.(type) {
	case mm.Posted:
		b.post(e.Post)
	case mm.PostEdited:
		if e.Post.UserID == b.o.Bot.ID {
			b.count("its own edit") // every reply is edited as it grows: counted, not logged
			return
		}
		b.ignore(e.Post.ID, e.Post.ChannelID, "an edit (edits are never read)")
	case mm.ReactionAdded:
		b.reaction(e.Reaction)
	case mm.ReactionRemoved:
		if _, ok := b.o.State.ApprovalByPost(e.Reaction.PostID); ok {
			b.log("ignored the removal of reaction %s by %s on approval post %s: a removed reaction changes nothing", e.Reaction.EmojiName, e.Reaction.UserID, e.Reaction.PostID)
		}
	}
}

// post handles a post once, whether it came live or in a catch-up.
func (b *Bridge) post(p mm.Post) {
	owner, served := b.byChannel[p.ChannelID]
	if served && b.o.State.Handled(p.ChannelID, p.ID, p.CreateAt) {
		return
	}
	switch {
	case !served:
		b.ignore(p.ID, p.ChannelID, "a channel gatewayd does not serve")
		return
	case p.UserID == b.o.Bot.ID:
		b.count("its own post")
		return
	case p.FromBot, p.FromWebhook, p.FromPlugin:
		// A webhook's post carries the id of whoever made the webhook.
		b.ignore(p.ID, p.ChannelID, "a post by a bot, webhook or plugin")
		return
	case p.Type != "":
		b.ignore(p.ID, p.ChannelID, "a system message")
		return
	case p.DeleteAt != 0:
		b.ignore(p.ID, p.ChannelID, "a deleted post")
		return
	case p.UserID != owner.ID:
		b.ignore(p.ID, p.ChannelID, "a post by someone who is not an owner")
		return
	}
	if err := b.o.State.Advance(p.ChannelID, p.ID, p.CreateAt); err != nil {
		b.log("cannot write the state file (post %s is handled, but may be handled again after a restart): %v; %s", p.ID, err, runbook.See("gatewayd-state-damaged"))
	}
	if p.RootID != "" {
		if _, ok := b.o.State.ApprovalByPost(p.RootID); ok {
			b.approvals.reply(p)
			return
		}
		if !b.conversation(owner, p.RootID) {
			b.ignore(p.ID, p.ChannelID, "a reply in a thread that is not a conversation (its root post is not the owner's)")
			return
		}
	}
	b.chat(owner, p)
}

// conversation says whether the thread rooted at root is one of the
// owner's conversations: one gatewayd knows (its session is stored, or a
// turn of it is running), else one whose root post the owner wrote (its
// first turn never reached loopd). A reply on the bot's own post (an
// approval no longer in the state file, an audit head) is an answer to
// gatewayd, never a message to the model.
func (b *Bridge) conversation(owner Owner, root string) bool {
	if _, ok := b.o.State.Thread(root); ok {
		return true
	}
	b.mu.Lock()
	_, working := b.workers[root]
	b.mu.Unlock()
	if working {
		return true
	}
	posts, err := b.o.MM.Thread(b.ctx, root)
	if err != nil {
		b.log("cannot read the thread of post %s to see whose it is: %v; %s", root, err, runbook.See("mattermost-unreachable"))
		return false
	}
	for _, q := range posts {
		if q.ID == root {
			return q.UserID == owner.ID && q.ChannelID == owner.Channel && q.RootID == "" && q.Type == "" &&
				!q.FromBot && !q.FromWebhook && !q.FromPlugin
		}
	}
	return false
}

// reaction handles a reaction once: only one on an approval post counts.
// Only reactions on approval posts are remembered (a catch-up reads them
// again), and only while the approval is in the table: anyone can react
// on any post of a channel the bot is in, for as long as gatewayd runs.
func (b *Bridge) reaction(r mm.Reaction) {
	if _, ok := b.o.State.ApprovalByPost(r.PostID); !ok {
		return // a reaction on any other post means nothing to gatewayd
	}
	if b.approvals.seen(r) {
		return
	}
	b.approvals.reaction(r)
}

// ignore logs a post that is not read, with how many have been so far.
func (b *Bridge) ignore(post, channel, why string) {
	n := b.count(why)
	b.log("ignored post %s in channel %s: %s (%d so far)", post, channel, why, n)
}

func (b *Bridge) count(why string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ignored[why]++
	return b.ignored[why]
}

// Ignored is how many posts were ignored, by reason (for tests and the log).
func (b *Bridge) Ignored() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for k, v := range b.ignored {
		out[k] = v
	}
	return out
}

// isOwner says whether user id is one of the owners.
func (b *Bridge) isOwner(id string) bool { _, ok := b.owners[id]; return ok }

// ownerName is the owner's user name, for texts.
func (b *Bridge) ownerName(id string) string {
	if ow, ok := b.owners[id]; ok && ow.Username != "" {
		return ow.Username
	}
	return id
}

// firstOwner is who gets approvals of sessions not from Mattermost, and
// the audit head.
func (b *Bridge) firstOwner() Owner { return b.o.Owners[0] }
