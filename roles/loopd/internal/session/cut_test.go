package session

import (
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
	"boxmaker/wire"
)

// Every request carries the answer limit; an answer that reaches it is
// cut there, the owner is told (answer_cut before the reply), the log says
// so after the answer, which stays as it was generated: the next request
// replays it and hits the cache in full, before and after a restart.
func TestAnswerCutAtTheLimit(t *testing.T) {
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(
		text(strings.Repeat("word ", 20)), text("Short."), text("Still short."))}, nil)
	e.cfg.MaxAnswerTokens = 8
	e.restart()
	evs := e.say(nil, "talk")
	id := sessionOf(t, evs)
	if len(evs) != 3 || evs[1] != (wire.TurnAnswerCut{Tokens: 8, Reason: wire.CutAnswerLimit}) {
		t.Fatalf("events %#v", evs)
	}
	if got := replyOf(t, evs); got != "word word word word " {
		t.Fatalf("reply %q", got)
	}
	recs := e.records(id, 0)
	if c, ok := recs[len(recs)-2].(wire.AnswerCut); !ok || c.Tokens != 8 || c.Reason != wire.CutAnswerLimit {
		t.Fatalf("log %#v", recs[len(recs)-2])
	}
	a, ok := recs[len(recs)-1].(wire.AssistantRecord)
	if !ok || *a.Content != "word word word word " {
		t.Fatalf("then %#v", recs[len(recs)-1])
	}
	if got := replyOf(t, e.say(&id, "and?")); got != "Short." {
		t.Fatalf("turn 2 %q", got)
	}
	e.restart()
	if got := replyOf(t, e.say(&id, "more?")); got != "Still short." {
		t.Fatalf("turn 3 %q", got)
	}
	chats := e.chats()
	for i, c := range chats {
		if !strings.HasSuffix(string(c.Body), `],"max_tokens":8}`) {
			t.Fatalf("request %d does not end with the limit: %s", i, c.Body[len(c.Body)-40:])
		}
	}
	if n := fullHits(t, chats, 1); n != 2 {
		t.Fatalf("%d requests checked", n)
	}
	if r := e.reported(); r != "" || count[wire.CacheLoss](e.records(id, 0)) != 0 {
		t.Fatalf("reports %q", r)
	}
}

// An answer cut in the middle of a tool call runs none of its calls, and
// the turn ends with failed after answer_cut. The log keeps the calls as
// returned, but no request replays them (llama-server refuses arguments
// that are not JSON), and a restart does not take them for interrupted.
func TestAnswerCutInToolCall(t *testing.T) {
	port := &recPort{resp: func(wire.ToolRequest) wire.ToolResponse { return wire.ResultResponse{Content: "x", Class: wire.Public} }}
	partial := `{"tool":"http_fetch","arguments":{"url":"https://ex`
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(
		fakellama.Reply{Content: "Let me fetch it.", Finish: "length",
			ToolCalls: []fakellama.ToolCall{{Name: "call_tool", Arguments: partial}}},
		text("Sorry, again?"))}, port)
	e.cfg.MaxAnswerTokens = 4096
	e.restart()
	evs := e.say(nil, "fetch it")
	id := sessionOf(t, evs)
	cut, ok := evs[1].(wire.TurnAnswerCut)
	if !ok || cut.Reason != wire.CutContextFull || evs[2] != (wire.TurnText{Content: "Let me fetch it."}) {
		t.Fatalf("events %#v", evs)
	}
	if msg := failedOf(t, evs); !strings.Contains(msg, "cut short in the middle of a tool call, so no call of it was run") ||
		!strings.HasSuffix(msg, "see docs/runbook.md#answer-cut") {
		t.Fatalf("failed %q", msg)
	}
	if len(port.got) != 0 {
		t.Fatalf("a call of a cut answer ran: %+v", port.got)
	}
	recs := e.records(id, 0)
	a, ok := recs[len(recs)-1].(wire.AssistantRecord)
	if _, cutRec := recs[len(recs)-2].(wire.AnswerCut); !cutRec || !ok || len(a.ToolCalls) != 1 || a.ToolCalls[0].Arguments != partial {
		t.Fatalf("log ends %#v", recs[len(recs)-2:])
	}
	e.restart()
	if got := replyOf(t, e.say(&id, "go on")); got != "Sorry, again?" {
		t.Fatalf("turn 2 %q", got)
	}
	if count[wire.ToolResultRecord](e.records(id, 0)) != 0 {
		t.Fatal("the cut call was answered")
	}
	body := string(e.chats()[1].Body)
	if strings.Contains(body, "tool_calls") || !strings.Contains(body, `{"role":"assistant","content":"Let me fetch it."},{"role":"user","content":"go on"}`) {
		t.Fatalf("the replay: %s", body)
	}
}
