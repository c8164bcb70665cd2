package bridge

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"boxmaker/roles/gatewayd/internal/inert"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// The approvals gatewayd has posted, and the first qualifying answer of
// each. An answer counts only when it is the reaction on the approval post
// of the owner it was posted to, or their reply in that post's own thread,
// and once it is written to the state file (so that a restart keeps that
// answer, never another); it is then passed to the brokerd connection that
// asked, or held until brokerd asks again (after a reconnect or a
// restart). A reaction or reply from anyone else, after expiry, after the
// end, a second answer, a removed reaction or an edited reply changes
// nothing and is logged; an answer that cannot be written is not counted,
// and the owner is told.

type pending struct {
	id      uint64
	broker  string
	post    string
	channel string // where the post is: its owner alone answers it
	expires wire.Timestamp
	ended   bool
	endedAt wire.Timestamp
	seen    map[reactionKey]bool // the reactions on the post handled so far
	gone    bool                 // asked by a brokerd that has since restarted
	answer  *wire.OwnerAnswer    // the first qualifying answer, once given
	sent    bool                 // the answer reached brokerd
	deliver chan wire.OwnerAnswer
}

type registry struct {
	b      *Bridge
	mu     sync.Mutex
	byID   map[uint64]*pending
	byPost map[string]*pending
	broker string // the brokerd instance that spoke last
	// posting holds the approvals being posted now, each closed when its
	// post is in the table (or failed): a request for the same one waits.
	posting map[uint64]chan struct{}
}

func newRegistry(b *Bridge) *registry {
	return &registry{b: b, byID: map[uint64]*pending{}, byPost: map[string]*pending{}, posting: map[uint64]chan struct{}{}}
}

// keep is how long an approval stays in the table after it ended or
// expired, as in the state file: a late answer on its post is recognised
// and logged with its reason.
const keep = wire.Timestamp(24 * 3600 * 1000)

// add puts an approval in the table, and drops those that ended or expired
// more than keep before now: the table would otherwise hold every approval
// of the run.
func (r *registry) add(p *pending, now wire.Timestamp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := func(p *pending) bool { return p.expires+keep < now || p.ended && p.endedAt+keep < now }
	for id, p := range r.byID {
		if old(p) {
			delete(r.byID, id)
		}
	}
	// (An id brokerd used again has its first post here only.)
	for post, p := range r.byPost {
		if old(p) {
			delete(r.byPost, post)
		}
	}
	r.byID[p.id] = p
	r.byPost[p.post] = p
}

// waitingPosts are the posts of approvals that still wait for an answer
// at now.
func (r *registry) waitingPosts(now wire.Timestamp) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.byID {
		if !p.ended && !p.gone && p.answer == nil && now < p.expires {
			out = append(out, p.post)
		}
	}
	return out
}

type reactionKey struct {
	user, emoji string
	at          int64
}

// seen says whether reaction re on an approval post was handled before,
// and notes it. A post the table does not hold remembers nothing: a
// catch-up never reads its reactions again.
func (r *registry) seen(re mm.Reaction) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.byPost[re.PostID]
	if !ok {
		return false
	}
	k := reactionKey{re.UserID, re.EmojiName, re.CreateAt}
	if p.seen[k] {
		return true
	}
	if p.seen == nil {
		p.seen = map[reactionKey]bool{}
	}
	p.seen[k] = true
	return false
}

// reaction is a reaction on an approval post.
func (r *registry) reaction(re mm.Reaction) {
	a := inert.ReactionAnswer(re.EmojiName)
	if a == inert.NoAnswer {
		r.b.log("ignored reaction %s by %s on approval post %s: it is not an answer", re.EmojiName, re.UserID, re.PostID)
		return
	}
	r.answer(re.PostID, "", re.UserID, a, "", re.CreateAt, "reaction "+re.EmojiName)
}

// reply is a post in an approval post's thread (already known to be an
// owner's, in the owner's channel; answer checks it is the post's).
func (r *registry) reply(p mm.Post) {
	if p.EditAt != 0 {
		r.b.log("ignored reply %s on approval post %s: it was edited, and an edited reply is never an answer", p.ID, p.RootID)
		return
	}
	a, reason := inert.ReplyAnswer(p.Message)
	if a == inert.NoAnswer {
		r.b.log("ignored reply %s on approval post %s: it is neither \"approve\" nor \"refuse\" (with a reason)", p.ID, p.RootID)
		return
	}
	r.answer(p.RootID, p.ChannelID, p.UserID, a, oneLine(reason), p.CreateAt, "reply "+p.ID)
}

// maxReason is the longest reason brokerd takes (its gateway.MaxReason).
const maxReason = 500

// oneLine makes a refusal's reason what brokerd accepts: printable text on
// one line of at most maxReason bytes. Line breaks and other spaces become
// one space; invisible and control characters are dropped. Without this a
// reason written on two lines would make brokerd ignore the refusal.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, c := range s {
		switch {
		case unicode.IsSpace(c):
			space = b.Len() > 0
			continue
		case !wire.Shown(c):
			continue
		}
		if space {
			if b.Len()+1+utf8.RuneLen(c) > maxReason {
				break
			}
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(c) > maxReason {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}

// answer records an owner's answer on post if it is the first that
// counts. channel is where a reply was written ("" for a reaction, which
// is on the post itself). Deciding and writing are one step under the
// table's lock: two answers at once cannot both count, and an answer that
// is not in the state file does not count.
func (r *registry) answer(post, channel, user string, a inert.Answer, reason string, at int64, what string) {
	if !r.b.isOwner(user) || user == r.b.o.Bot.ID {
		r.b.log("ignored %s on approval post %s: %s is not an owner", what, post, user)
		return
	}
	r.mu.Lock()
	p, ok := r.byPost[post]
	var why string
	switch {
	case !ok:
		why = "gatewayd holds no live approval for that post (it ended, or gatewayd restarted since)"
	case p.gone:
		why = "the brokerd that asked has restarted, and approvals do not survive a restart"
	case p.ended:
		why = "the approval has already ended"
	case p.answer != nil:
		why = "the approval already has its answer"
	case wire.Timestamp(at) >= p.expires || wire.TimestampOf(r.b.o.Now()) >= p.expires:
		why = "it came after the approval expired"
	case channel != "" && channel != p.channel:
		why = fmt.Sprintf("it is not in the approval post's own thread (it was written in channel %s, the post is in %s)", channel, p.channel)
	case r.b.byChannel[p.channel].ID != user:
		why = fmt.Sprintf("%s is not the owner the approval was posted to (in channel %s)", user, p.channel)
	}
	if why != "" {
		r.mu.Unlock()
		r.b.log("ignored %s by %s on approval post %s: %s", what, user, post, why)
		return
	}
	answer, _ := a.Wire() // a is Approve or Refuse: the callers return on NoAnswer
	ans := wire.OwnerAnswer{Answer: answer, By: user, Post: post}
	if a == inert.Refuse && reason != "" {
		ans.Reason = &reason
	}
	if err := r.b.o.State.Answer(p.id, ans); err != nil {
		id, ch := p.id, p.channel
		r.mu.Unlock()
		r.notCounted(id, ch, post, user, what, err)
		return
	}
	p.answer = &ans
	deliver := p.deliver
	r.mu.Unlock()
	if deliver != nil {
		deliver <- ans // capacity 1, and only the first answer is sent
	}
	// Logged after it is on its way: this is the path the owner waits on.
	r.b.log("approval %d: %s by %s (%s) on post %s", p.id, ans.Answer, r.b.ownerName(user), user, post)
}

// notCounted says, in the log and in the approval post's thread, that an
// answer was not counted because it could not be written.
func (r *registry) notCounted(id uint64, channel, post, user, what string, err error) {
	r.b.log("approval %d: the %s by %s (%s) on post %s was not counted: it cannot be written to the state file (%v); the owner is asked to answer again; %s",
		id, what, r.b.ownerName(user), user, post, err, runbook.See("gatewayd-answer-not-counted"))
	n := strconv.FormatUint(id, 10)
	text := "⚠️ That answer was not counted: gatewayd cannot write its state file. Remove it and answer again in a while, or answer with " +
		inert.Code("bxctl approve "+n) + " or " + inert.Code("bxctl refuse "+n) + "."
	if _, err := r.b.o.MM.CreatePost(r.b.ctx, channel, post, text); err != nil {
		r.b.log("cannot tell the owner on Mattermost that an answer on post %s was not counted: %v; %s", post, err, runbook.See("mattermost-unreachable"))
	}
}

// attach registers a brokerd connection waiting for approval id's answer;
// it returns the answer already given, if any (sent once).
func (r *registry) attach(id uint64) (chan wire.OwnerAnswer, *wire.OwnerAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.byID[id]
	if !ok { // dropped meanwhile: nothing will be given
		return make(chan wire.OwnerAnswer, 1), nil
	}
	if p.answer != nil && !p.sent {
		p.sent = true
		return nil, p.answer
	}
	p.deliver = make(chan wire.OwnerAnswer, 1)
	return p.deliver, nil
}

// delivered notes that the answer reached brokerd; detach notes that the
// connection closed without it, so an answer is held for the next one.
//
// ch is the connection's channel and ans what it passed. A write that
// succeeded may still have gone to a connection brokerd had just closed:
// when brokerd has asked again on another connection meanwhile, the answer
// goes to that one too (brokerd takes the first answer it reads).
func (r *registry) delivered(id uint64, ch chan wire.OwnerAnswer, ans wire.OwnerAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.byID[id]
	if !ok {
		return
	}
	p.sent = true
	if p.deliver != nil && p.deliver != ch {
		select {
		case p.deliver <- ans:
		default:
		}
		return
	}
	p.deliver = nil
}

// undelivered notes that an answer attach returned did not reach brokerd:
// it is held for the next connection.
func (r *registry) undelivered(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.byID[id]; ok {
		p.sent = false
	}
}

func (r *registry) detach(id uint64, ch chan wire.OwnerAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.byID[id]
	if !ok {
		return
	}
	var held *wire.OwnerAnswer
	select {
	case ans := <-ch: // given while the connection was closing, or not passed
		held = &ans
	default:
	}
	if p.deliver != ch && p.deliver != nil {
		// brokerd asked again on another connection meanwhile: the answer
		// this one could not pass goes to that one (its channel is empty:
		// only the first answer is ever sent), or it would wait for ever.
		if held != nil {
			select {
			case p.deliver <- *held:
			default:
			}
		}
		return
	}
	p.deliver = nil
	if held != nil { // held for brokerd's next connection
		p.answer = held
		p.sent = false
	}
}
