package harness_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
)

// askNotes starts a turn that needs the notes-read ask grant, in a new
// thread, and returns the thread's root and the approval's post.
func (w *mmWorld) askNotes(text string) (root fakemm.Post, id uint64, ap fakemm.Post) {
	w.t.Helper()
	root = w.mm.Post(w.owner.ID, w.dm, "", text)
	id = w.pending()
	return root, id, w.approvalPost(id)
}

// checkApproved says the Approval record was written with who answered on
// which post.
func (w *mmWorld) checkAnswer(answer, by, post string, reason *string) {
	w.t.Helper()
	a := w.lastApproval()
	if a.Answer.String() != answer || a.By == nil || *a.By != by || (post == "") != (a.Post == nil) || (a.Post != nil && *a.Post != post) {
		w.t.Fatalf("approval record: answer %s by %v post %v; want %s by %s post %q", a.Answer, deref(a.By), deref(a.Post), answer, by, post)
	}
	if (reason == nil) != (a.Reason == nil) || (reason != nil && *reason != *a.Reason) {
		w.t.Fatalf("approval record reason %v, want %v", deref(a.Reason), deref(reason))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func TestMattermostApprovals(t *testing.T) {
	w := startMattermost(t, 120000)

	// By reaction.
	root, _, ap := w.askNotes("What do my notes say?")
	w.mm.React(w.owner.ID, ap.ID, "+1")
	w.reply(root.ID, "Water the plants")
	w.checkAnswer("approved", w.owner.ID, ap.ID, nil)
	w.wait("the post edited to approved by kyle", func(p fakemm.Post) bool {
		return p.ID == ap.ID && strings.Contains(p.Message, "Approved on Mattermost by `kyle`")
	})
	// The head on the post is the log's: bxctl accepts it, and refuses
	// any other.
	head := regexp.MustCompile(`[0-9]+:[0-9a-f]{64}`).FindString(ap.Message)
	if out, err := w.bxctl("audit", "verify", "--head", head); err != nil || !strings.Contains(out, "head "+head+" matches") {
		t.Fatalf("audit verify --head %s: %v\n%s", head, err, out)
	}
	seq, hash, _ := strings.Cut(head, ":")
	for _, bad := range []string{seq + ":" + strings.Repeat("0", 64), "999999:" + hash} {
		if out, err := w.bxctl("audit", "verify", "--head", bad); err == nil || !strings.Contains(out, "audit-head-posted-mismatch") {
			t.Fatalf("audit verify --head %s accepted: %v\n%s", bad, err, out)
		}
	}

	// Nothing but an owner's answer on the approval's own post counts.
	root2, id2, ap2 := w.askNotes("Read my notes again.")
	// (A stranger cannot react or reply in the owner's direct channel: the
	// server refuses it. gatewayd's own check of who answered is tested in
	// roles/gatewayd/internal/bridge with events no server would send.)
	w.mm.Post(w.bot.ID, w.dm, ap2.ID, "approve")
	w.mm.React(w.owner.ID, ap2.ID, "smile")
	typo := w.mm.Post(w.owner.ID, w.dm, ap2.ID, "looks fine")
	w.mm.Edit(w.owner.ID, typo.ID, "approve")
	strangerDM := w.mm.DirectChannel(w.bot.ID, w.stranger.ID)
	strangerPost := w.mm.Post(w.stranger.ID, strangerDM, "", "approve "+itoa(id2))
	// A forged approval: in the conversation's thread, "approve <id>" is
	// a chat message for the model, queued behind the waiting turn.
	w.mm.Post(w.owner.ID, w.dm, root2.ID, "approve "+itoa(id2))
	w.logCount("ignored post "+strangerPost.ID+" in channel "+strangerDM+": a channel gatewayd does not serve", 1)
	w.logCount("ignored post "+typo.ID+" in channel "+w.dm+": an edit (edits are never read)", 1)
	time.Sleep(time.Second)
	if got := w.pending(); got != id2 {
		t.Fatalf("approval %d is no longer pending (now %d)", id2, got)
	}
	// Then a reply in the approval's thread approves it.
	w.mm.Post(w.owner.ID, w.dm, ap2.ID, "Approve.")
	w.reply(root2.ID, "Water the plants")
	w.checkAnswer("approved", w.owner.ID, ap2.ID, nil)
	// The forged approval reached the model as text, after the turn.
	w.reply(root2.ID, "scripted stand-in model")

	// Refused with a reason; a second answer changes nothing.
	root3, _, ap3 := w.askNotes("What do my notes say now?")
	w.mm.Post(w.owner.ID, w.dm, ap3.ID, "refuse  not on a Sunday ")
	w.reply(root3.ID, "Denied: the owner refused this call.")
	reason := "not on a Sunday"
	w.checkAnswer("refused", w.owner.ID, ap3.ID, &reason)
	w.wait("the post edited to refused", func(p fakemm.Post) bool {
		return p.ID == ap3.ID && strings.Contains(p.Message, "Refused on Mattermost by") && strings.Contains(p.Message, "not on a Sunday")
	})
	w.mm.React(w.owner.ID, ap3.ID, "+1")
	w.logCount("ignored reaction +1 by "+w.owner.ID+" on approval post "+ap3.ID+": the approval has already ended", 1)

	// bxctl answers as before, and the post says so.
	root4, id4, ap4 := w.askNotes("Notes, please.")
	if out, err := w.bxctl("approve", itoa(id4)); err != nil {
		t.Fatalf("bxctl approve: %v\n%s", err, out)
	}
	w.reply(root4.ID, "Water the plants")
	w.checkAnswer("approved", "bxctl", "", nil)
	w.wait("the post edited to approved with bxctl", func(p fakemm.Post) bool {
		return p.ID == ap4.ID && strings.Contains(p.Message, "Approved with bxctl")
	})
	verify(t, w.h)
	noLeftovers(t, w.h)
}

// The WebSocket drops: what the owner writes and answers meanwhile is
// handled once it is back, and once only. gatewayd down: brokerd keeps the
// call pending and bxctl approves. brokerd restarted: an answer on its
// old approval is refused as unknown, and the post says so.
func TestMattermostOutages(t *testing.T) {
	w := startMattermost(t, 120000)
	w.mm.SetDown(true)
	root := w.mm.Post(w.owner.ID, w.dm, "", "What do my notes say?")
	w.mm.SetDown(false)
	id := w.pending()
	ap := w.approvalPost(id)
	w.mm.SetDown(true)
	w.mm.React(w.owner.ID, ap.ID, "white_check_mark")
	w.mm.SetDown(false)
	w.reply(root.ID, "Water the plants")
	w.checkAnswer("approved", w.owner.ID, ap.ID, nil)
	w.mm.DropSockets()
	time.Sleep(2 * time.Second) // reconnected and caught up again: nothing twice
	if n := countReplies(w, root.ID); n != 1 {
		t.Fatalf("%d replies in the thread, want 1\n%s", n, w.dump())
	}
	if got := kinds(events(t, w.h)); got != "decision:ask approval:approved result:result" {
		t.Fatalf("audit events: %s", got)
	}

	// gatewayd down. brokerd already said "gatewayd-unreachable" once at
	// its start (gatewayd was not up yet): the outage must say it again.
	before := strings.Count(w.log.String(), "gatewayd-unreachable")
	if err := w.h.Kill("gatewayd"); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { out, _ := w.bxctl("chat", "--say", "What do my notes say?"); done <- out }()
	id = w.pending()
	w.logCount("gatewayd-unreachable", before+1)
	if out, err := w.bxctl("approve", itoa(id)); err != nil {
		t.Fatalf("bxctl approve with gatewayd down: %v\n%s", err, out)
	}
	if out := <-done; !strings.Contains(out, "Water the plants") {
		t.Fatalf("chat:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.h.StartRole(ctx, "gatewayd"); err != nil {
		t.Fatal(err)
	}

	// brokerd restarts while its approval waits; the answer comes after.
	_, _, ap = w.askNotes("Read my notes once more.")
	if err := w.h.Kill("brokerd"); err != nil {
		t.Fatal(err)
	}
	w.mm.React(w.owner.ID, ap.ID, "+1")
	if err := w.h.StartRole(ctx, "brokerd"); err != nil {
		t.Fatal(err)
	}
	w.wait("the post saying brokerd restarted", func(p fakemm.Post) bool {
		return p.ID == ap.ID && strings.Contains(p.Message, "restarted")
	})
	if got := kinds(events(t, w.h)); strings.Count(got, "approval:") != 2 {
		t.Fatalf("audit events: %s; the answer after the restart must record nothing", got)
	}
	verify(t, w.h)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
