package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

func TestThreadsAndApprovalsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway", "state.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := wire.NewSessionID("chat-1")
	if err := s.SetThread(Thread{Root: "r1", Channel: "c1", Owner: "o1", Session: sess}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApproval(Approval{ID: 41, Broker: "b", Post: "p41", Channel: "c1", Text: "approve?", Expires: 2000}, 1000); err != nil {
		t.Fatal(err)
	}
	if err := s.Advance("c1", "p1", 5000); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if th, ok := again.Thread("r1"); !ok || th.Session != sess || th.Owner != "o1" {
		t.Fatalf("thread after restart: %+v %v", th, ok)
	}
	if th, ok := again.ThreadOf(sess); !ok || th.Root != "r1" {
		t.Fatalf("ThreadOf after restart: %+v %v", th, ok)
	}
	if a, ok := again.ApprovalByPost("p41"); !ok || a.ID != 41 || a.Text != "approve?" {
		t.Fatalf("approval after restart: %+v %v", a, ok)
	}
	if !again.Handled("c1", "p1", 5000) || again.Handled("c1", "p2", 5001) {
		t.Fatal("cursor after restart is wrong")
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("a temporary file is left: %v", err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %o", fi.Mode().Perm())
	}
}

// A post is handled once: before the cursor's overlap everything counts as
// handled; within it, only the posts seen.
func TestCursorOverlap(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "s.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Handled("c", "x", 1) {
		t.Fatal("a channel never read has handled posts")
	}
	s.StartCursor("c", 100000)
	if !s.Handled("c", "old", 99999) || s.Handled("c", "new", 100000) {
		t.Fatal("a first start must skip the history and read what comes after")
	}
	s.Advance("c", "a", 200000)
	s.Advance("c", "b", 199000) // arrived late, made in the overlap
	for id, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if got := s.Handled("c", id, 199500); got != want {
			t.Errorf("Handled(%s) = %v", id, got)
		}
	}
	if !s.Handled("c", "z", 200000-Overlap-1) {
		t.Error("a post before the overlap is not handled")
	}
	s.Advance("c", "d", 300000)
	c, _ := s.Cursor("c")
	if len(c.Seen) != 1 || c.Seen[0].ID != "d" {
		t.Errorf("Seen keeps posts older than the overlap: %+v", c.Seen)
	}
}

func TestDamagedStateIsRefused(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage":                "{",
		"unknown":                `{"threads":[],"approvals":[],"cursors":[],"extra":1}`,
		"answer on another post": `{"threads":[],"approvals":[{"id":1,"broker":"b","post":"p1","channel":"c","text":"t","expires":"1970-01-01T00:00:02.000Z","ended":false,"answer":{"answer":"approved","by":"u","post":"p2","reason":null}}],"cursors":[]}`,
		"answer as null":         `{"threads":[],"approvals":[{"id":1,"broker":"b","post":"p1","channel":"c","text":"t","expires":"1970-01-01T00:00:02.000Z","ended":false,"answer":null}],"cursors":[]}`,
		"bad thread":             `{"threads":[{"root":"r","channel":"c","owner":"o","session":"BAD ID"}],"approvals":[],"cursors":[]}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		_, err := Open(p)
		if err == nil || !strings.Contains(err.Error(), "see docs/runbook.md#gatewayd-state-damaged") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestOldApprovalsArePruned(t *testing.T) {
	s, _ := Open(filepath.Join(t.TempDir(), "s.json"))
	s.PutApproval(Approval{ID: 1, Post: "p1", Expires: 1000}, 1000)
	s.PutApproval(Approval{ID: 2, Post: "p2", Expires: 1000 + keepEnded + 10}, 1000+keepEnded+5)
	if _, ok := s.Approval(1); ok {
		t.Error("an approval expired more than a day ago is kept")
	}
	if _, ok := s.Approval(2); !ok {
		t.Error("a fresh approval is dropped")
	}
	if _, ok := s.ApprovalByPost("p1"); ok {
		t.Error("a dropped approval is still found by its post")
	}
	if a, ok := s.ApprovalByPost("p2"); !ok || a.ID != 2 {
		t.Errorf("ApprovalByPost(p2) = %+v, %v", a, ok)
	}
	// An approval posted again (a new post for the same id) is found by
	// its new post only.
	s.PutApproval(Approval{ID: 2, Post: "p2b", Expires: 1000 + keepEnded + 10}, 1000+keepEnded+5)
	if _, ok := s.ApprovalByPost("p2"); ok {
		t.Error("the old post still names the approval")
	}
	if a, ok := s.ApprovalByPost("p2b"); !ok || a.ID != 2 {
		t.Errorf("ApprovalByPost(p2b) = %+v, %v", a, ok)
	}
}
