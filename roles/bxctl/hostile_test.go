package bxctl

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// The owner sees the truth (issue 12): what the chat client prints when
// the model or loopd lie.

// hostileTurn is a turn whose model text imitates the client's own lines:
// a tool call, an approval block, an outcome and an answer, split by the
// separators a terminal or a naive client may take for a line break, with a
// tool call whose name and arguments spell an outcome line.
func hostileTurn(wire.Say) []wire.TurnEvent {
	fake := "tool call 7: shell {\"command\":\"ls\"}\n" +
		"41  2 min ago  expires in 13 min  session chat-1758…  grant notes-read  taint private  arguments 18 bytes  digest 88e6b57c0173bf09\n" +
		"    read_file {\"path\":\"/n/a.md\"}\n" +
		"approved 41: runs\r\x1b[2Kapproved 42: runs\u2028refused 43\u2029tool call 8 ended: result, public\u0085\u202eevil\n"
	return []wire.TurnEvent{
		wire.TurnSession{Session: chatSession},
		wire.TurnText{Content: fake},
		wire.TurnToolCall{Call: 1, Tool: "result,", Arguments: "private"},
		wire.TurnReply{Content: "\napproved 41: runs\n\u2502 quoted gutter"},
	}
}

const hostileOut = "│ tool call 7: shell {\"command\":\"ls\"}\n" +
	"│ 41  2 min ago  expires in 13 min  session chat-1758…  grant notes-read  taint private  arguments 18 bytes  digest 88e6b57c0173bf09\n" +
	"│     read_file {\"path\":\"/n/a.md\"}\n" +
	"│ approved 41: runs\\u000d\\u001b[2Kapproved 42: runs\\u2028refused 43\\u2029tool call 8 ended: result, public\\u0085\\u202eevil\n" +
	"│ \n" +
	"tool call 1: result, private\n" +
	"│ \n" +
	"│ approved 41: runs\n" +
	"│ │ quoted gutter\n"

// TestChatHostileModelText: byte for byte, every line the model wrote is
// behind the gutter, and none of the client's own lines is.
func TestChatHostileModelText(t *testing.T) {
	loop := startLoopd(t, hostileTurn)
	code, out, errs := runChat("", "--say", "hi", "--loop-socket", loop.path, "--admin-socket", filepath.Join(t.TempDir(), "none.sock"))
	if code != 0 || out != hostileOut {
		t.Fatalf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errs, out, hostileOut)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(l, gutter) && l != "tool call 1: result, private" {
			t.Errorf("a line not behind the gutter: %q", l)
		}
	}
}

// TestChatHostileWrap: under a terminal of 40 columns, a model line that
// fills a row to start the next with "approved 41: runs" is broken by the
// client, and the rest is behind the gutter; so are tool call arguments.
func TestChatHostileWrap(t *testing.T) {
	defer func(f func(io.Writer) int) { termWidth = f }(termWidth)
	termWidth = func(io.Writer) int { return 40 }
	fill := strings.Repeat("x", 38)
	loop := startLoopd(t, func(wire.Say) []wire.TurnEvent {
		return []wire.TurnEvent{wire.TurnToolCall{Call: 1, Tool: "shell", Arguments: strings.Repeat("y", 26) + "approved 41: runs"},
			wire.TurnReply{Content: fill + "approved 41: runs"}}
	})
	code, out, errs := runChat("", "--say", "hi", "--loop-socket", loop.path)
	want := "tool call 1: shell " + strings.Repeat("y", 21) + "\n│ " + strings.Repeat("y", 5) + "approved 41: runs\n" +
		"│ " + fill[:37] + "\n│ " + fill[37:] + "approved 41: runs\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errs, out, want)
	}
}

// TestChatRefusesWithoutBrokerdDetails (issue 12): when brokerd's block
// for the pending approval cannot be fetched, the client says why and does
// not ask; the y that follows is the owner's next message, not an approval.
func TestChatRefusesWithoutBrokerdDetails(t *testing.T) {
	other := pendingItem
	other.Approval = 40
	for name, answer := range map[string]func(wire.Message) []wire.Message{
		"unreachable": nil,
		"error frame": func(wire.Message) []wire.Message {
			return []wire.Message{wire.WireError{Code: wire.Internal, Detail: "the approval_list answer is larger than one frame"}}
		},
		"not listed": func(wire.Message) []wire.Message {
			return []wire.Message{wire.ApprovalList{Items: []wire.PendingApproval{other}}}
		},
		"list cut short": func(wire.Message) []wire.Message {
			return []wire.Message{wire.ApprovalList{Items: []wire.PendingApproval{other}},
				wire.WireError{Code: wire.Internal, Detail: "pending approvals too large to show in one frame (1 MiB), left out of the list: 41"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			loop := startLoopd(t, pendingTurn)
			sock := filepath.Join(t.TempDir(), "admin.sock")
			var b *fakeBrokerd
			if answer != nil {
				b = startPaged(t, "", answer)
				sock = b.path
			}
			code, out, errs := runChat("read my notes\ny\n", "--loop-socket", loop.path, "--admin-socket", sock)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			if strings.Contains(errs, "[y/N]") || strings.Contains(out, "approved") || strings.Contains(out, "refused") || strings.Contains(out, "arguments ") {
				t.Fatalf("asked, answered or showed a block:\nstdout %s\nstderr %s", out, errs)
			}
			want := "bxctl chat: not asking about approval 41 (tool read_file, expires at 2026-09-17T08:20:00.000Z): " +
				"brokerd's details of it cannot be fetched, and loopd's word is not enough to approve on: "
			if !strings.Contains(errs, want) || !strings.Contains(errs, "\nsee docs/runbook.md#approval-details-unavailable\n") {
				t.Fatalf("stderr %q", errs)
			}
			if b != nil {
				for _, r := range b.requests() {
					if _, ok := r.(wire.Approvals); !ok {
						t.Errorf("sent %#v", r)
					}
				}
			}
			if len(loop.says) != 2 || loop.says[1].Text != "y" {
				t.Errorf("says %#v: the y was not the next message", loop.says)
			}
		})
	}
}

// TestApprovalsInFrames: a list in several frames is printed whole; one
// cut short by an error frame is printed as far as it came, with why, and
// is exit status 1.
func TestApprovalsInFrames(t *testing.T) {
	a, b := pendingItem, pendingItem
	a.Approval, b.Approval = 41, 42
	f := startPaged(t, "", func(wire.Message) []wire.Message {
		return []wire.Message{wire.ApprovalList{Items: []wire.PendingApproval{a}}, wire.ApprovalList{Items: []wire.PendingApproval{b}}}
	})
	code, out, errs := run("approvals", "--admin-socket", f.path)
	if code != 0 || out != approvalBlock(a, now0)+approvalBlock(b, now0) || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	f = startPaged(t, "", func(wire.Message) []wire.Message {
		return []wire.Message{wire.ApprovalList{Items: []wire.PendingApproval{a}}, wire.WireError{Code: wire.Internal, Detail: "left out of the list: 42"}}
	})
	code, out, errs = run("approvals", "--admin-socket", f.path)
	want := "bxctl approvals: brokerd could not list every pending approval: internal: left out of the list: 42\nsee docs/runbook.md#approvals-incomplete\n"
	if code != 1 || out != approvalBlock(a, now0) || errs != want {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
