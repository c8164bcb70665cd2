package bxctl

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// fakeLoopd answers each say on loop.sock with the events turn returns for
// it, the last one final.
type fakeLoopd struct {
	path string
	mu   sync.Mutex
	says []wire.Say
}

func startLoopd(t *testing.T, turn func(wire.Say) []wire.TurnEvent) *fakeLoopd {
	t.Helper()
	dir, err := os.MkdirTemp("", "bx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakeLoopd{path: filepath.Join(dir, "loop.sock")}
	ln, err := net.Listen("unix", f.path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				env, err := wire.ReadRequest(c)
				if err != nil {
					t.Errorf("fake loopd: %v", err)
					return
				}
				say := env.Msg.(wire.Say)
				f.mu.Lock()
				f.says = append(f.says, say)
				f.mu.Unlock()
				events := turn(say)
				for i, ev := range events {
					if err := wire.WriteEnvelope(c, wire.Reply(env.ID, i == len(events)-1, ev)); err != nil {
						t.Errorf("fake loopd: %v", err)
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return f
}

func runChat(stdin string, args ...string) (int, string, string) {
	var out, errs bytes.Buffer
	code := runCLI(&cli{}, append([]string{"chat"}, args...), &env{name: "bxctl", stdin: strings.NewReader(stdin),
		stdout: &out, stderr: &errs, now: func() time.Time { return now0 }})
	return code, out.String(), errs.String()
}

var chatSession = func() wire.SessionID { id, _ := wire.NewSessionID("chat-1758096300000"); return id }()

func pendingTurn(wire.Say) []wire.TurnEvent {
	r := wire.NoGrant
	return []wire.TurnEvent{
		wire.TurnSession{Session: chatSession},
		wire.TurnToolCall{Call: 1, Tool: "read_file", Arguments: `{"path":"/n/a.md"}`},
		wire.TurnApprovalPending{Approval: 41, Tool: "read_file", Expires: wire.TimestampOf(now0.Add(13 * time.Minute))},
		wire.TurnToolOutcome{Call: 1, Tool: "read_file", Status: wire.ToolResult, Class: wire.Private},
		wire.TurnToolOutcome{Call: 2, Tool: "http_fetch", Status: wire.ToolDenied, Reason: &r, Class: wire.Public},
		wire.TurnReply{Content: "Your notes\nsay \x1b[2Jhello"},
	}
}

var pendingItem = wire.PendingApproval{Approval: 41, Session: chatSession, Call: 1, Tool: "read_file",
	Arguments: `{"path":"/n/a.md"}`, Grant: "notes-read", Taint: wire.Private,
	Created: wire.TimestampOf(now0.Add(-2 * time.Minute)), Expires: wire.TimestampOf(now0.Add(13 * time.Minute))}

// admin answers approvals with pendingItem and approve with runs.
func admin(m wire.Message) wire.Message {
	switch m.(type) {
	case wire.Approvals:
		return wire.ApprovalList{Items: []wire.PendingApproval{pendingItem}}
	case wire.Approve:
		return wire.ApproveResult{Outcome: wire.OutcomeAsk{}}
	case wire.Refuse:
		return wire.OK{}
	}
	return wire.WireError{Code: wire.Forbidden}
}

const wantBlock = "41  2 min ago  expires in 13 min  session chat-1758…  grant notes-read  taint private  arguments 18 bytes  digest 88e6b57c0173bf09\n" +
	"    read_file {\"path\":\"/n/a.md\"}\n"

// TestChatInteractiveApproves: the approval block as approvals prints it,
// the question on stderr, y approves over admin.sock, and the model's text
// is printed as data.
func TestChatInteractiveApproves(t *testing.T) {
	loop := startLoopd(t, pendingTurn)
	b := startFake(t, "", admin)
	code, out, errs := runChat("read my notes\ny\n", "--loop-socket", loop.path, "--admin-socket", b.path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	want := "tool call 1: read_file {\"path\":\"/n/a.md\"}\n" + wantBlock + "approved 41: runs\n" +
		"tool call 1 ended: result, private\ntool call 2 ended: denied (no_grant)\n│ Your notes\n│ say \\u001b[2Jhello\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errs, "approve 41? [y/N] ") || !strings.Contains(errs, "[session chat-1758096300000, epoch 0]") {
		t.Errorf("stderr: %q", errs)
	}
	reqs := b.requests()
	if len(reqs) != 2 || reqs[1] != (wire.Approve{Approval: 41}) {
		t.Errorf("admin requests: %#v", reqs)
	}
	if len(loop.says) != 1 || loop.says[0].Text != "read my notes" || loop.says[0].Session != nil {
		t.Errorf("says: %#v", loop.says)
	}
}

// TestChatAnythingButYRefuses, and the next message continues the session.
func TestChatAnythingButYRefuses(t *testing.T) {
	loop := startLoopd(t, pendingTurn)
	b := startFake(t, "", admin)
	code, out, errs := runChat("read my notes\nyes please\nagain\n\n", "--loop-socket", loop.path, "--admin-socket", b.path)
	if code != 0 || !strings.Contains(out, "refused 41\n") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if reqs := b.requests(); len(reqs) != 4 || reqs[1] != (wire.Refuse{Approval: 41}) || reqs[3] != (wire.Refuse{Approval: 41}) {
		t.Errorf("admin requests: %#v", reqs)
	}
	if len(loop.says) != 2 || loop.says[1].Session == nil || *loop.says[1].Session != chatSession {
		t.Errorf("the second message did not continue the session: %#v", loop.says)
	}
}

// TestChatSayAndJSONDoNotAsk: --say and --json print the pending event and
// ask nothing; --json prints each event as a JSON line.
func TestChatSayAndJSONDoNotAsk(t *testing.T) {
	loop := startLoopd(t, pendingTurn)
	b := startFake(t, "", admin)
	code, out, _ := runChat("y\n", "--say", "read my notes", "--loop-socket", loop.path, "--admin-socket", b.path)
	if code != 0 || !strings.Contains(out, wantBlock) || strings.Contains(out, "approved") {
		t.Fatalf("--say: exit %d\n%s", code, out)
	}
	code, out, _ = runChat("", "--say", "read my notes", "--json", "--loop-socket", loop.path, "--admin-socket", b.path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 6 || lines[2] != `{"type":"approval_pending","approval":41,"tool":"read_file","expires":"2026-09-17T08:20:00.000Z"}` {
		t.Fatalf("--json: exit %d\n%s", code, out)
	}
	for _, r := range b.requests() {
		if _, ok := r.(wire.Approvals); !ok {
			t.Errorf("--say or --json sent %#v", r)
		}
	}
}

func TestChatFailedTurnAndNoLoopd(t *testing.T) {
	loop := startLoopd(t, func(wire.Say) []wire.TurnEvent {
		return []wire.TurnEvent{wire.TurnFailed{Message: "the model server is unavailable"}}
	})
	code, _, errs := runChat("", "--say", "hi", "--loop-socket", loop.path)
	if code != 1 || !strings.Contains(errs, "turn failed: the model server is unavailable") {
		t.Fatalf("exit %d, %q", code, errs)
	}
	code, _, errs = runChat("", "--say", "hi", "--loop-socket", filepath.Join(t.TempDir(), "none.sock"))
	if code != 1 || !strings.Contains(errs, "see docs/runbook.md#loop-unavailable") {
		t.Fatalf("exit %d, %q", code, errs)
	}
}

// An answer_cut event is shown as the client's own line on stderr, with
// its runbook entry, before the reply behind its gutter.
func TestChatAnswerCut(t *testing.T) {
	for _, tc := range []struct {
		ev   wire.TurnAnswerCut
		want string
	}{
		{wire.TurnAnswerCut{Tokens: 2048, Reason: wire.CutAnswerLimit},
			"the answer below was cut short after 2048 tokens: it reached loopd's answer limit ([model] max_answer_tokens)\n"},
		{wire.TurnAnswerCut{Tokens: 37, Reason: wire.CutContextFull},
			"the answer below was cut short after 37 tokens: the model's context was full\n"},
	} {
		loop := startLoopd(t, func(wire.Say) []wire.TurnEvent {
			return []wire.TurnEvent{wire.TurnSession{Session: chatSession}, tc.ev, wire.TurnReply{Content: "la la la"}}
		})
		code, out, errs := runChat("", "--say", "sing", "--loop-socket", loop.path)
		if code != 0 || out != "\u2502 la la la\n" ||
			errs != "[session chat-1758096300000, epoch 0]\n"+tc.want+"see docs/runbook.md#answer-cut\n" {
			t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errs)
		}
	}
}
