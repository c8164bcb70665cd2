package bxctl

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

func TestShortSession(t *testing.T) {
	for in, want := range map[string]string{
		"s-1":                  "s-1",
		"chat-17580":           "chat-17580", // ten: shown whole
		"chat-175809":          "chat-1758…",
		"chat-1758096300":      "chat-1758…",
		"gateway-1758096300-x": "gateway-1…",
	} {
		if got := shortSession(in); got != want {
			t.Errorf("shortSession(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpan(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0 s"},
		{0, "0 s"},
		{59999 * time.Millisecond, "59 s"},
		{time.Minute, "1 min"},
		{13*time.Minute + 59*time.Second, "13 min"},
		{59 * time.Minute, "59 min"},
		{time.Hour, "1 h"},
		{47*time.Hour + 59*time.Minute, "47 h"},
		{48 * time.Hour, "2 d"},
		{100 * 24 * time.Hour, "100 d"},
	} {
		if got := span(tc.d); got != tc.want {
			t.Errorf("span(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestLongArgumentsSummarised: a command padded so that its start scrolls
// away is shown again, both ends, just before the question; short
// arguments are not repeated.
func TestLongArgumentsSummarised(t *testing.T) {
	p := wire.PendingApproval{Approval: 41, Tool: "shell", Grant: "shell-scratch", Taint: wire.Private,
		Arguments: `{"command":"rm -rf ~/notes;` + strings.Repeat(" ", 3000) + ` echo hi"}`}
	want := `approval 41: shell under grant shell-scratch, arguments 3037 bytes, digest dcdd5671543e60bc: {\u0022command\u0022:\u0022rm -rf ~/notes;` +
		`\u0020{33} … \u0020{51}echo hi\u0022}` + "\n"
	want = strings.ReplaceAll(want, `\u0022`, `"`)
	if got := longArguments(p); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	p.Arguments = `{"command":"ls"}`
	if got := longArguments(p); got != "" {
		t.Fatalf("short arguments: %q", got)
	}
}

// TestApprovalDigest: the digest shown is the first 16 hex digits of the
// SHA-256 of the call as gatewayd's post digests it, the canonical JSON of
// tool, arguments, grant and taint (written out here by hand), and a change
// to any one of the four changes it.
func TestApprovalDigest(t *testing.T) {
	p := wire.PendingApproval{Approval: 41, Tool: "shell", Grant: "shell-scratch", Taint: wire.Private,
		Arguments: `{"command": "rm -rf /home/kyle/scratch/build", "cwd": "/home/kyle/scratch"}`}
	canonical := `{"tool":"shell","arguments":"{\"command\": \"rm -rf /home/kyle/scratch/build\", \"cwd\": \"/home/kyle/scratch\"}",` +
		`"grant":"shell-scratch","taint":"private"}`
	sum := sha256.Sum256([]byte(canonical))
	want := hex.EncodeToString(sum[:])[:16]
	if got := callDigest(p); got != want || want != "62c96eee9515436c" {
		t.Fatalf("digest %s, want %s (the golden in TestApprovalsOutput is 62c96eee9515436c)", got, want)
	}
	if !strings.Contains(approvalBlock(p, time.Now()), "  arguments 75 bytes  digest "+want+"\n") {
		t.Fatalf("block %q", approvalBlock(p, time.Now()))
	}
	for name, change := range map[string]func(*wire.PendingApproval){
		"tool":      func(p *wire.PendingApproval) { p.Tool = "shel" },
		"arguments": func(p *wire.PendingApproval) { p.Arguments += " " },
		"grant":     func(p *wire.PendingApproval) { p.Grant = "shell-scratch2" },
		"taint":     func(p *wire.PendingApproval) { p.Taint = wire.Secret },
	} {
		q := p
		change(&q)
		if callDigest(q) == want {
			t.Errorf("a changed %s keeps the digest", name)
		}
	}
	// What only the listing shows is not part of the call.
	q := p
	q.Approval, q.Call, q.Created, q.Expires = 42, 9, 1, 2
	if callDigest(q) != want {
		t.Error("the digest depends on more than the call")
	}
}
