package prompt

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"boxmaker/wire"
)

// The answer limit ends every request sent, but not the conversation that
// .sent records: a changed limit is not a changed history.
func TestAnswerLimit(t *testing.T) {
	p := prefix
	p.MaxTokens = 2048
	r := New(2, p)
	for _, rec := range history() {
		r.Append(rec)
	}
	plain := build(history())
	sent := bytes.Join(r.Parts(), nil)
	body := r.Body()
	if !bytes.Equal(body, plain.Body()) || r.Hash() != plain.Hash() || r.Size() != len(body) {
		t.Fatal("the answer limit changed the conversation's bytes or hash")
	}
	if want := string(body[:len(body)-2]) + `],"max_tokens":2048}`; string(sent) != want {
		t.Fatalf("sent\n got %s\nwant %s", sent, want)
	}
	if !json.Valid(sent) {
		t.Fatal("not JSON")
	}
	if string(bytes.Join(plain.Parts(), nil)) != string(plain.Body()) {
		t.Fatal("without a limit the request sent is the body")
	}
}

// A refused record withdraws the record before it: the next request is
// what it would have been had the record never been appended, the parts of
// the refused request are not overwritten, the withdrawn text is no longer
// pending for the check, and a rebuild from the log gives the same bytes.
func TestRefusedWithdraws(t *testing.T) {
	huge := wire.UserRecord{Content: strings.Repeat("word ", 100) + "<|im_end|>"}
	small := wire.UserRecord{Content: "hello again"}
	for _, withdrawn := range []wire.LogRecord{huge, wire.ToolResultRecord{Call: 2, ToolCallID: "c9", Content: huge.Content}} {
		r := build(history())
		r.Hash() // the running hash has read the history
		r.Checked()
		r.Append(withdrawn)
		if len(r.Pending()) == 0 {
			t.Fatal("the new text is not pending")
		}
		r.Checked()
		refusedParts := r.Parts()
		refusedBytes := string(bytes.Join(refusedParts, nil))
		r.Append(wire.RefusedRecord{PromptTokens: 900, NCtx: 512})
		if !bytes.Equal(r.Body(), build(history()).Body()) || r.Hash() != wire.Sha256(r.Body()) {
			t.Fatalf("after the refusal: %s", r.Body())
		}
		r.Append(small)
		want := build(append(history(), small))
		if !bytes.Equal(r.Body(), want.Body()) || r.Hash() != want.Hash() {
			t.Fatalf("next request\n got %s\nwant %s", r.Body(), want.Body())
		}
		if string(bytes.Join(refusedParts, nil)) != refusedBytes {
			t.Fatal("the refused request's parts were overwritten")
		}
		n := len(history())
		if r.Len() != n+3 || !bytes.Equal(r.BodyAt(n+1), r.BodyAt(n)) || !bytes.Equal(r.BodyAt(n+2), r.BodyAt(n)) {
			t.Fatal("the withdrawn and refused records must count, rendering nothing")
		}

		// Rebuilt from the log: the same bytes, and only texts still sent
		// are pending.
		log := append(history(), withdrawn, wire.RefusedRecord{PromptTokens: 900, NCtx: 512}, small)
		again := build(log)
		if !bytes.Equal(again.Body(), r.Body()) {
			t.Fatal("the rebuild differs")
		}
		if slices.ContainsFunc(again.Pending(), func(s string) bool { return strings.Contains(s, "word word") }) {
			t.Fatal("the withdrawn text is still pending")
		}
		if !slices.Contains(again.Pending(), "hello again") {
			t.Fatalf("pending %q", again.Pending())
		}
	}
}

// An assistant record after an answer_cut record is replayed without its
// tool calls, whose arguments were cut off; nothing else changes, and the
// record after it renders as usual.
func TestCutAnswerReplayedWithoutCalls(t *testing.T) {
	partial := wire.AssistantRecord{Content: str("Let me look."), ReasoningContent: str("r"),
		ToolCalls: []wire.ToolCall{{ID: "c1", Name: "call_tool", Arguments: `{"tool":"read_fi`}}}
	r := build(append(history(), wire.AnswerCut{Tokens: 9, Reason: wire.CutAnswerLimit}, partial, wire.UserRecord{Content: "go on"}))
	want := build(append(history(), wire.AssistantRecord{Content: str("Let me look."), ReasoningContent: str("r")}, wire.UserRecord{Content: "go on"}))
	if !bytes.Equal(r.Body(), want.Body()) {
		t.Fatalf("body\n got %s\nwant %s", r.Body(), want.Body())
	}
	// Without the cut record the calls are replayed.
	whole := build(append(history(), partial))
	if !bytes.Contains(whole.Body(), []byte(`"tool_calls":[{"id":"c1"`)) {
		t.Fatalf("body %s", whole.Body())
	}
}
