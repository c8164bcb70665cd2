package wire

import (
	"errors"
	"strings"
	"testing"
)

// The digest names one exact call: the same four fields give the same
// digest, and a change to any one of them (even one that moves text from
// one field to the next) gives another.
func TestCallDigest(t *testing.T) {
	base := CallDigest("shell", fxArgs, "shell-scratch", Private)
	if got, want := base.String(), "5ec286d95466162159950bdc7fff949a1f7caad381e234657157236593bea9ef"; got != want {
		t.Fatalf("CallDigest = %s, want %s (the fixture msg-approval_request.json holds it too)", got, want)
	}
	if CallDigest("shell", fxArgs, "shell-scratch", Private) != base {
		t.Fatal("CallDigest is not deterministic")
	}
	for name, d := range map[string]Hash32{
		"tool":      CallDigest("read_file", fxArgs, "shell-scratch", Private),
		"arguments": CallDigest("shell", fxArgs+" ", "shell-scratch", Private),
		"grant":     CallDigest("shell", fxArgs, "shell-scratch2", Private),
		"taint":     CallDigest("shell", fxArgs, "shell-scratch", Secret),
		"shifted":   CallDigest("shel", "l"+fxArgs, "shell-scratch", Private),
	} {
		if d == base {
			t.Errorf("changing the %s leaves the digest unchanged", name)
		}
	}
	if got := DigestPrefix(base); got != "5ec286d954661621" {
		t.Errorf("DigestPrefix = %q", got)
	}
}

func TestValidMattermostID(t *testing.T) {
	for s, want := range map[string]bool{
		fxOwner:                                true,
		fxPost:                                 true,
		"":                                     false,
		fxOwner[:25]:                           false,
		fxOwner + "a":                          false,
		"8XK3Q9WZB7F1JDM4YTR6HCN2PA":           false,
		"8xk3q9wzb7f1jdm4ytr6hcn2p-":           false,
		"8xk3q9wzb7f1jdm4ytr6hcn2p\n":          false,
		"8xk3q9wzb7f1jdm4ytr6hcn2p\u00e9"[:26]: false,
	} {
		if got := ValidMattermostID(s); got != want {
			t.Errorf("ValidMattermostID(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestJobResultCheck: both ends refuse the same job_results, and the
// content's bound is exact.
func TestJobResultCheck(t *testing.T) {
	ok := JobResult{Job: "morning-digest", Session: fxSession, Status: JobOK, Content: "hi"}
	at := func(f func(*JobResult)) JobResult { r := ok; f(&r); return r }
	for _, c := range []struct {
		name string
		r    JobResult
		want error // nil: accepted
	}{
		{"ok", ok, nil},
		{"failed", at(func(r *JobResult) { r.Status = JobFailed }), nil},
		{"empty content", at(func(r *JobResult) { r.Content = "" }), nil},
		{"content at the bound", at(func(r *JobResult) { r.Content = strings.Repeat("x", MaxJobResultContent) }), nil},
		{"content over the bound", at(func(r *JobResult) { r.Content = strings.Repeat("x", MaxJobResultContent+1) }), ErrJobResultTooLarge},
		{"multibyte content over the bound", at(func(r *JobResult) { r.Content = strings.Repeat("é", MaxJobResultContent/2+1) }), ErrJobResultTooLarge},
		{"no job", at(func(r *JobResult) { r.Job = "" }), ErrInvalidValue},
		{"job not an id", at(func(r *JobResult) { r.Job = "Morning Digest" }), ErrInvalidValue},
		{"job too long", at(func(r *JobResult) { r.Job = strings.Repeat("a", 65) }), ErrInvalidValue},
		{"no session", at(func(r *JobResult) { r.Session = SessionID{} }), ErrInvalidValue},
		{"no status", at(func(r *JobResult) { r.Status = 0 }), ErrInvalidValue},
		{"unknown status", at(func(r *JobResult) { r.Status = 3 }), ErrInvalidValue},
	} {
		err := c.r.Check()
		if (err == nil) != (c.want == nil) || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: Check() = %v, want %v", c.name, err, c.want)
		}
	}
	// A job_result at the bound fits a frame even with every byte escaped.
	worst := at(func(r *JobResult) { r.Content = strings.Repeat("\x01", MaxJobResultContent) })
	b, err := MarshalEnvelope(Request(1, worst))
	if err != nil || len(b) > MaxFrame {
		t.Fatalf("the largest job_result is %d bytes (%v); a frame holds %d", len(b), err, MaxFrame)
	}
}
