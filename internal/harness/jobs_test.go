package harness_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/wire"
)

// TestJobAskApprovedOnMattermost, end to end: the owner starts a job
// (bxctl jobs run); its run asks under the job's own grant, the approval
// reaches the stand-in Mattermost and the owner approves it there; the
// result is posted to the owner and written as a note; bxctl jobs shows the
// run; the audit log has the run's start and end around its calls, and
// verifies.
func TestJobAskApprovedOnMattermost(t *testing.T) {
	w := startMattermost(t, 120000)
	h := w.h
	grant := "tool = \"read_file\"\nmode = \"ask\"\nmax_taint = \"secret\"\nuntrusted = false\njob = \"digest\"\n\n[constraints]\npaths = [\"" +
		h.Notes() + "\"]\n"
	if err := os.WriteFile(filepath.Join(h.GrantsDir(), "digest-notes.toml"), []byte(grant), 0o644); err != nil {
		t.Fatal(err)
	}
	job := "every = \"24h\"\nprompt = \"What do my notes say?\"\nresult = \"both\"\n"
	if err := os.WriteFile(filepath.Join(h.JobsDir(), "digest.toml"), []byte(job), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := w.bxctl("jobs", "run", "digest"); err != nil || !strings.HasPrefix(out, "started digest (due ") {
		t.Fatalf("jobs run: %v\n%s", err, out)
	}
	var id uint64
	for deadline := time.Now().Add(60 * time.Second); id == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if out, err := w.bxctl("approvals"); err == nil && strings.Contains(out, "grant digest-notes") {
			id, _ = parseUint(strings.Fields(out)[0])
		}
	}
	if id == 0 {
		t.Fatal("the job's call never became pending")
	}
	ap := w.approvalPost(id)
	w.mm.React(w.owner.ID, ap.ID, "+1")
	w.wait("the job's result", func(p fakemm.Post) bool {
		return p.UserID == w.bot.ID && strings.Contains(p.Message, "Scheduled job `digest`") &&
			strings.Contains(p.Message, "finished") && strings.Contains(p.Message, "Water the plants")
	})
	w.checkAnswer("approved", w.owner.ID, ap.ID, nil)
	// job_ended follows the post and the note.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		evs := events(t, h)
		if _, ok := evs[len(evs)-1].(wire.JobEndedEvent); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no job_ended record")
		}
	}

	var session string
	var kinds []string
	for _, ev := range events(t, h) {
		switch e := ev.(type) {
		case wire.JobStartedEvent:
			session = e.Session.String()
			if e.Job != "digest" || e.Trigger != wire.TriggerManual {
				t.Fatalf("job_started: %+v", e)
			}
			kinds = append(kinds, "job_started")
		case wire.DecisionEvent:
			if e.Session.String() == session {
				kinds = append(kinds, kindsOf(e))
			}
		case wire.ApprovalEvent:
			kinds = append(kinds, "approval:"+e.Answer.String())
		case wire.ResultEvent:
			kinds = append(kinds, "result")
		case wire.JobEndedEvent:
			if e.Status != wire.JobOK {
				t.Fatalf("job_ended: %+v", e)
			}
			kinds = append(kinds, "job_ended")
		}
	}
	if got := strings.Join(kinds, " "); got != "job_started decision:ask approval:approved result job_ended" {
		t.Fatalf("audit: %s", got)
	}
	if out, err := w.bxctl("jobs"); err != nil || !strings.Contains(out, "digest  every 24h") || !strings.Contains(out, "(manual) ok session "+session) {
		t.Fatalf("bxctl jobs: %v\n%s", err, out)
	}
	if out, err := w.bxctl("notes", "list"); err != nil || !strings.Contains(out, "trusted  session "+session) {
		t.Fatalf("notes list: %v\n%s", err, out)
	}
	verify(t, h)
}

// kindsOf is an event as kinds names it.
func kindsOf(ev wire.AuditEvent) string { return kinds([]wire.AuditEvent{ev}) }
