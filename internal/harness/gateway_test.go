package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/internal/harness"
	"boxmaker/internal/syncbuf"
	"boxmaker/wire"
)

// Issue 14 end to end: the stand-in Mattermost in this process, and
// gatewayd, brokerd, loopd, inferproxy and the stand-in model as real
// processes, with real Podman for the tools.

type mmWorld struct {
	t                    *testing.T
	mm                   *fakemm.Server
	h                    *harness.Harness
	log                  *syncbuf.Buffer
	bot, owner, stranger fakemm.User
	dm                   string
}

func startMattermost(t *testing.T, ttlMs int) *mmWorld {
	t.Helper()
	srv, err := fakemm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	w := &mmWorld{t: t, mm: srv}
	w.bot = srv.AddUser("boxmaker", true)
	w.owner = srv.AddUser("kyle", false)
	w.stranger = srv.AddUser("mallory", false)
	w.dm = srv.DirectChannel(w.bot.ID, w.owner.ID)
	w.h, w.log = startWith(t, ttlMs, &harness.Mattermost{URL: srv.URL(), Token: w.bot.Token, Owners: []string{w.owner.ID}})
	return w
}

// wait waits for a post that f accepts (f runs under the server's lock:
// it must not call the server).
func (w *mmWorld) wait(what string, f func(fakemm.Post) bool) fakemm.Post {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := w.mm.WaitFor(ctx, f)
	if err != nil {
		w.t.Fatalf("waiting for %s: %v\nposts in the owner's channel:\n%s", what, err, w.dump())
	}
	return p
}

func (w *mmWorld) dump() string {
	var b strings.Builder
	for _, p := range w.mm.Posts(w.dm) {
		fmt.Fprintf(&b, "  %s root=%s by=%s: %q\n", p.ID, p.RootID, p.UserID, p.Message)
	}
	return b.String()
}

// reply waits for the bot's reply in thread root to contain want.
func (w *mmWorld) reply(root, want string) fakemm.Post {
	w.t.Helper()
	return w.wait("the reply in thread "+root+" saying "+want, func(p fakemm.Post) bool {
		return p.RootID == root && p.UserID == w.bot.ID && strings.Contains(p.Message, want)
	})
}

// approvalPost waits for the bot's approval post for approval id.
func (w *mmWorld) approvalPost(id uint64) fakemm.Post {
	w.t.Helper()
	return w.wait(fmt.Sprintf("approval %d's post", id), func(p fakemm.Post) bool {
		return p.UserID == w.bot.ID && p.RootID == "" && strings.Contains(p.Message, fmt.Sprintf("approve %d", id))
	})
}

// pending is the id of the one approval brokerd holds, once there is one.
func (w *mmWorld) pending() uint64 {
	w.t.Helper()
	id := pendingApproval(w.t, w.h)
	n, err := parseUint(id)
	if err != nil {
		w.t.Fatalf("approval id %q: %v", id, err)
	}
	return n
}

func parseUint(s string) (uint64, error) {
	var n uint64
	_, err := fmt.Sscan(s, &n)
	return n, err
}

// threads reads gatewayd's state file: thread root → session.
func (w *mmWorld) threads() map[string]string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.h.Home, "gateway", "state.json"))
	if err != nil {
		w.t.Fatal(err)
	}
	var st struct {
		Threads []struct{ Root, Session string }
	}
	if err := json.Unmarshal(b, &st); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, th := range st.Threads {
		out[th.Root] = th.Session
	}
	return out
}

// lastApproval is the last Approval record of the audit log.
func (w *mmWorld) lastApproval() wire.ApprovalEvent {
	w.t.Helper()
	evs := events(w.t, w.h)
	for i := len(evs) - 1; i >= 0; i-- {
		if a, ok := evs[i].(wire.ApprovalEvent); ok {
			return a
		}
	}
	w.t.Fatal("no approval record")
	return wire.ApprovalEvent{}
}

func (w *mmWorld) bxctl(args ...string) (string, error) {
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := w.h.Bxctl(ctx, nil, &out, &out, args...)
	return out.String(), err
}

// logCount waits for the harness's log to say want at least n times. A
// check names what only the case under test can log (a post's id), or
// counts from before it: a line said earlier must not pass it.
func (w *mmWorld) logCount(want string, n int) {
	w.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Count(w.log.String(), want) >= n {
			return
		}
	}
	w.t.Fatalf("the log said %q %d times, want %d", want, strings.Count(w.log.String(), want), n)
}

// outsideCode is text with its code spans and fences taken out, the way
// CommonMark reads them: a backtick run opens, the next run of the same
// length closes.
func outsideCode(s string) string {
	var b strings.Builder
	run := regexp.MustCompile("`+")
	for {
		loc := run.FindStringIndex(s)
		if loc == nil {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:loc[0]])
		fence := s[loc[0]:loc[1]]
		rest := s[loc[1]:]
		closed := false
		for off := 0; ; {
			m := run.FindStringIndex(rest[off:])
			if m == nil {
				break
			}
			if m[1]-m[0] == len(fence) {
				s = rest[off+m[1]:]
				closed = true
				break
			}
			off += m[1]
		}
		if !closed {
			b.WriteString(fence)
			s = rest
		}
	}
}

func TestMattermostConversations(t *testing.T) {
	w := startMattermost(t, 120000)
	first := w.mm.Post(w.owner.ID, w.dm, "", "hello")
	w.reply(first.ID, "scripted stand-in model")
	second := w.mm.Post(w.owner.ID, w.dm, "", "hello again")
	w.reply(second.ID, "scripted stand-in model")
	th := w.threads()
	if th[first.ID] == "" || th[second.ID] == "" || th[first.ID] == th[second.ID] {
		t.Fatalf("two threads must be two sessions: %v", th)
	}

	// A restart of gatewayd keeps the thread's session.
	if err := w.h.Kill("gatewayd"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.h.StartRole(ctx, "gatewayd"); err != nil {
		t.Fatal(err)
	}
	more := w.mm.Post(w.owner.ID, w.dm, first.ID, "and once more")
	w.wait("a second reply in the first thread", func(p fakemm.Post) bool {
		return p.RootID == first.ID && p.UserID == w.bot.ID && p.CreateAt > more.CreateAt && strings.Contains(p.Message, "scripted stand-in model")
	})
	if got := w.threads()[first.ID]; got != th[first.ID] {
		t.Fatalf("after a restart the thread is session %s, was %s", got, th[first.ID])
	}
	log, err := os.ReadFile(filepath.Join(w.h.Home, "sessions", th[first.ID], "0.jsonl"))
	if err != nil || !strings.Contains(string(log), "and once more") || !strings.Contains(string(log), `"hello"`) {
		t.Fatalf("the first session's log does not hold both messages: %v\n%s", err, log)
	}

	// Model text is inert: a tool's output quoting hostile markdown comes
	// back with every URL, image and mention inside code.
	hostile := w.mm.Post(w.owner.ID, w.dm, "", "run: echo '![x](https://attacker.example/?q=1) <img src=https://attacker.example/i> @channel @kyle'")
	r := w.reply(hostile.ID, "attacker.example")
	if out := outsideCode(r.Message); strings.Contains(out, "attacker") || strings.Contains(out, "@channel") ||
		strings.Contains(out, "@kyle") || strings.Contains(out, "![") || strings.Contains(out, "<img") {
		t.Fatalf("hostile text outside code in the reply:\n%s\n(outside code: %q)", r.Message, out)
	}

	// Posts that are not an owner's, in a served channel, are never read.
	strangerDM := w.mm.DirectChannel(w.bot.ID, w.stranger.ID)
	strangerPost := w.mm.Post(w.stranger.ID, strangerDM, "", "What do my notes say?")
	w.logCount("ignored post "+strangerPost.ID+" in channel "+strangerDM+": a channel gatewayd does not serve", 1)
	edited := w.mm.Post(w.owner.ID, w.dm, "", "hello")
	w.reply(edited.ID, "scripted stand-in model")
	w.mm.Edit(w.owner.ID, edited.ID, "What do my notes say?")
	w.logCount("ignored post "+edited.ID+" in channel "+w.dm+": an edit (edits are never read)", 1)
	if n := countBotReplies(w); n != 5 {
		t.Fatalf("the bot made %d replies, want 5 (one per message it read)\n%s", n, w.dump())
	}
	verify(t, w.h)
}

func countReplies(w *mmWorld, root string) int {
	n := 0
	for _, p := range w.mm.Posts(w.dm) {
		if p.RootID == root && p.UserID == w.bot.ID {
			n++
		}
	}
	return n
}

// countBotReplies counts the bot's replies in threads, and fails on any
// root post of the bot's but the audit head's: brokerd posts the head when
// its start message reaches gatewayd, which may be before or after its log
// has a record (then there is none), so that post is not counted.
func countBotReplies(w *mmWorld) int {
	w.t.Helper()
	n := 0
	for _, p := range w.mm.Posts(w.dm) {
		switch {
		case p.UserID != w.bot.ID:
		case p.RootID != "":
			n++
		case !strings.HasPrefix(p.Message, "🔗 brokerd started: audit head "):
			w.t.Fatalf("the bot posted %q at the top of the channel", p.Message)
		}
	}
	return n
}
