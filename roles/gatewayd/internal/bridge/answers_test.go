package bridge

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"boxmaker/internal/fakemm"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/wire"
)

// TestAnswersThatDoNotCount: only an owner's reaction on the approval
// post, or an owner's own unedited reply in its thread, answers. Each of
// these is forged where no server would send it; each changes nothing (the
// owner's reaction after it is still the first answer, and is delivered)
// and is logged, or, for the bot's own posts, counted.
func TestAnswersThatDoNotCount(t *testing.T) {
	w := newWorld(t, nil)
	reply := func(ap string, f func(*mm.Post)) func() {
		return func() {
			p := mm.Post{ID: newID(), ChannelID: w.dm, RootID: ap, UserID: w.owner.ID, Message: "approve",
				CreateAt: w.now(), UpdateAt: w.now()}
			f(&p)
			w.event(mm.Posted{Post: p})
		}
	}
	react := func(user, ap, emoji string) func() {
		return func() {
			w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: user, PostID: ap, EmojiName: emoji, CreateAt: w.now()}})
		}
	}
	cases := []struct {
		name string
		do   func(ap string) func()
		log  []string // what the log line says; nil when only counted
	}{
		{"a stranger's reaction", func(ap string) func() { return react(w.strngr.ID, ap, "+1") },
			[]string{"ignored reaction +1 on approval post", "is not an owner"}},
		{"a stranger's reply in the owner's channel", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.UserID = w.strngr.ID })
		}, []string{"a post by someone who is not an owner"}},
		{"the other owner's reply in this owner's channel", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.UserID = w.owner2.ID })
		}, []string{"a post by someone who is not an owner"}},
		{"the other owner's reaction", func(ap string) func() { return react(w.owner2.ID, ap, "+1") },
			[]string{"ignored reaction +1 by " + w.owner2.ID, "not the owner the approval was posted to"}},
		{"the other owner's reply in their own channel, rooted at this approval post", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.UserID, p.ChannelID = w.owner2.ID, w.dm2 })
		}, []string{"ignored reply", "not in the approval post's own thread"}},
		{"the bot's own reaction", func(ap string) func() { return react(w.bot.ID, ap, "white_check_mark") },
			[]string{"ignored reaction white_check_mark on approval post", w.bot.ID + " is not an owner"}},
		{"the bot's own reply", func(ap string) func() {
			return func() { w.posted(w.mm.Post(w.bot.ID, w.dm, ap, "approve")) }
		}, nil},
		{"a webhook's post under the owner's id", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.FromWebhook = true })
		}, []string{"a post by a bot, webhook or plugin"}},
		{"a plugin's post under the owner's id", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.FromPlugin = true })
		}, []string{"a post by a bot, webhook or plugin"}},
		{"a bot's post under the owner's id", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.FromBot = true })
		}, []string{"a post by a bot, webhook or plugin"}},
		{"a system message", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.Type = "system_add_to_channel" })
		}, []string{"a system message"}},
		{"a deleted reply", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.DeleteAt = p.CreateAt + 1 })
		}, []string{"a deleted post"}},
		{"an edited reply, posted", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.EditAt = p.CreateAt + 1 })
		}, []string{"it was edited, and an edited reply is never an answer"}},
		{"a reply edited to approve", func(ap string) func() {
			return func() {
				typo := w.say(w.owner.ID, w.dm, ap, "looks fine")
				w.event(mm.PostEdited{Post: mmPost(w.mm.Edit(w.owner.ID, typo.ID, "approve"))})
			}
		}, []string{"an edit (edits are never read)"}},
		{"a reply in another channel", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.ChannelID = w.strangerDM })
		}, []string{"a channel gatewayd does not serve"}},
		{"a reply that is not an answer", func(ap string) func() {
			return reply(ap, func(p *mm.Post) { p.Message = "approve 3" })
		}, []string{"it is neither \"approve\" nor \"refuse\""}},
		{"an emoji that is not an answer", func(ap string) func() { return react(w.owner.ID, ap, "smile") },
			[]string{"ignored reaction smile", "it is not an answer"}},
		{"a removed reaction", func(ap string) func() {
			return func() {
				w.event(mm.ReactionRemoved{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap, EmojiName: "+1", CreateAt: w.now()}})
			}
		}, []string{"ignored the removal of reaction +1", "a removed reaction changes nothing"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := uint64(100 + i)
			conn, ap := w.ask(w.request(id))
			before := w.logs.count(c.log...)
			own := w.b.Ignored()["its own post"]
			c.do(ap)()
			if c.log != nil {
				w.logs.waitFor(t, before+1, c.log...)
			} else if got := w.b.Ignored()["its own post"]; got != own+1 {
				t.Fatalf("the bot's own posts counted %d, want %d", got, own+1)
			}
			noAnswer(t, conn)
			// The approval still waits: the owner's reaction is its first
			// answer.
			w.react(w.owner.ID, ap, "+1")
			a := answer(t, conn)
			if a.Answer != wire.Approved || a.By != w.owner.ID || a.Post != ap || a.Reason != nil {
				t.Fatalf("answer %+v; want approved by %s on %s", a, w.owner.ID, ap)
			}
		})
	}
	if n := w.loop.count(); n != 0 {
		t.Fatalf("loopd was told %d says; no answer may reach it", n)
	}
}

// TestReplyInAnotherThreadIsChat: "approve" in a conversation's thread is a
// message to the model, not an answer (the forged approval of issue 14),
// and another owner's reaction is no answer either.
func TestReplyInAnotherThreadIsChat(t *testing.T) {
	w := newWorld(t, nil)
	conn, ap := w.ask(w.request(7))
	root := w.say(w.owner.ID, w.dm, "", "What is in my notes?")
	w.say(w.owner.ID, w.dm, root.ID, "approve")
	says := w.loop.waitSays(t, 2)
	if says[1].Text != "approve" || says[1].Session == nil {
		t.Fatalf("loopd was told %+v; want approve in the thread's session", says[1])
	}
	noAnswer(t, conn)
	// Only the owner the approval was posted to answers it: the second
	// owner's reaction in the first owner's channel (forged: the server
	// refuses it, the channel is not theirs) is logged and counts nothing.
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner2.ID, PostID: ap, EmojiName: "thumbsup_medium_skin_tone", CreateAt: w.now()}})
	w.logs.waitFor(t, 1, "ignored reaction thumbsup_medium_skin_tone by "+w.owner2.ID, "not the owner the approval was posted to")
	noAnswer(t, conn)
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap, EmojiName: "thumbsup_medium_skin_tone", CreateAt: w.now()}})
	if a := answer(t, conn); a.By != w.owner.ID || a.Answer != wire.Approved {
		t.Fatalf("answer %+v; want approved by the owner it was posted to", a)
	}
}

// TestFirstAnswerOnly: the first owner's answer is delivered once; a second
// answer, by reaction or reply, is logged and changes nothing, and brokerd
// asking again gets the same post and no second answer.
func TestFirstAnswerOnly(t *testing.T) {
	w := newWorld(t, nil)
	req := w.request(8)
	conn, ap := w.ask(req)
	w.say(w.owner.ID, w.dm, ap, "Refuse: it deletes\nthe build\tfolder")
	a := answer(t, conn)
	if a.Answer != wire.Refused || a.By != w.owner.ID || a.Post != ap || a.Reason == nil || *a.Reason != "it deletes the build folder" {
		t.Fatalf("answer %+v (reason %v)", a, a.Reason)
	}
	w.react(w.owner.ID, ap, "+1")
	w.logs.waitFor(t, 1, "ignored reaction +1", "the approval already has its answer")
	w.say(w.owner.ID, w.dm, ap, "approve")
	w.logs.waitFor(t, 1, "ignored reply", "the approval already has its answer")
	again, post := w.ask(req)
	if post != ap {
		t.Fatalf("asked again: post %s, want %s", post, ap)
	}
	noAnswer(t, again)
	if n := len(w.botPosts(w.dm)); n != 1 {
		t.Fatalf("%d bot posts; want the one approval post", n)
	}
}

// TestAnswerAfterExpiry: an answer once the approval has expired is logged
// and not delivered, whether it came late or is read late.
func TestAnswerAfterExpiry(t *testing.T) {
	w := newWorld(t, nil)
	conn, ap := w.ask(w.request(9))
	w.clock.advance(15*time.Minute + time.Millisecond)
	w.react(w.owner.ID, ap, "+1")
	w.logs.waitFor(t, 1, "ignored reaction +1", "it came after the approval expired")
	// An event that says it was made after the expiry.
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap, EmojiName: "x", CreateAt: w.now()}})
	w.logs.waitFor(t, 1, "ignored reaction x", "it came after the approval expired")
	noAnswer(t, conn)
}

// TestAnswerAfterEnded: once brokerd says the approval ended, its post
// shows how, and an answer is logged and not delivered.
func TestAnswerAfterEnded(t *testing.T) {
	w := newWorld(t, nil)
	conn, ap := w.ask(w.request(10))
	bx := "bxctl"
	if m := w.call(wire.ApprovalEnded{Approval: 10, End: wire.EndApproved, By: &bx}); m != (wire.OK{}) {
		t.Fatalf("approval_ended: %#v", m)
	}
	w.waitPost("edited to approved with bxctl", func(p fakemm.Post) bool {
		return p.ID == ap && strings.Contains(p.Message, "Approved with bxctl")
	})
	w.react(w.owner.ID, ap, "-1")
	w.logs.waitFor(t, 1, "ignored reaction -1", "approval post "+ap)
	w.say(w.owner.ID, w.dm, ap, "refuse")
	w.logs.waitFor(t, 1, "ignored reply", "approval post "+ap)
	noAnswer(t, conn)
}

// TestRefusalReasonIsOneLine: a reason written on many lines, with control
// and invisible characters, longer than brokerd takes, arrives as one
// printable line of at most 500 bytes, which brokerd accepts.
func TestRefusalReasonIsOneLine(t *testing.T) {
	w := newWorld(t, nil)
	conn, ap := w.ask(w.request(11))
	long := "refuse because\r\n\n  it\u200b deletes\u0007 the\u2028folder\u00a0" + strings.Repeat("é and ", 200)
	w.say(w.owner.ID, w.dm, ap, long)
	a := answer(t, conn)
	if a.Answer != wire.Refused || a.Reason == nil {
		t.Fatalf("answer %+v", a)
	}
	r := *a.Reason
	if len(r) > 500 || !utf8.ValidString(r) || !strings.HasPrefix(r, "because it deletes the folder é and é") {
		t.Fatalf("reason %q (%d bytes)", r, len(r))
	}
	for _, c := range r {
		if c != ' ' && (!unicode.IsPrint(c) || unicode.In(c, unicode.Other_Default_Ignorable_Code_Point)) {
			t.Fatalf("reason %q holds %U", r, c)
		}
	}
	if strings.HasSuffix(r, " ") || strings.Contains(r, "  ") {
		t.Fatalf("reason %q has spaces that are not single", r)
	}
}
