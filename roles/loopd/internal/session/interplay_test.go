package session

import (
	"context"
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
	"boxmaker/wire"
)

// The two features of issue 16 together: a session moved to another slot
// within its epoch has a message refused and a tool result withheld there,
// and loopd restarts. The rebuilt request is the one last sent (no
// session-rebuild-differs), it names the slot the session moved to, the
// session finds its whole history cached there, and neither the refused
// message nor the withheld result is ever sent again.
func TestMovedSessionRefusedThenRestart(t *testing.T) {
	port := &recPort{resp: func(wire.ToolRequest) wire.ToolResponse {
		return wire.ResultResponse{Content: filler(900), Class: wire.Public}
	}}
	script := func(_ int, req *fakellama.ChatRequest) fakellama.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.Contains(string(last.Content), "read it") {
			return call("call_tool", `{"tool":"read_file","arguments":{"path":"/n/big.md"}}`)
		}
		return text("ok")
	}
	e := newEnv(t, fakellama.Options{Slots: 2, NCtx: 1200, Script: script}, port)
	e.cfg.Slots, e.cfg.NCtx, e.cfg.MaxAnswerTokens = 2, 1200, 64
	e.cfg.Tokens = func(ctx context.Context, text string) (int, error) {
		ids, err := e.client.TokenizeEach(ctx, []string{text}, true)
		if err != nil {
			return 0, err
		}
		return len(ids[0]), nil
	}
	e.restart()
	ss := &sessions{e: e, ids: map[string]wire.SessionID{}}
	for _, who := range []string{"A", "B", "C", "A"} { // C takes A's slot 0; A moves to 1
		ss.say(who)
	}
	id := ss.ids["A"]
	msg := failedOf(t, e.say(&id, filler(1300)))
	if !strings.Contains(msg, "your message was not sent") {
		t.Fatalf("refusal %q", msg)
	}
	if got := replyOf(t, e.say(&id, "read it")); got != "ok" {
		t.Fatalf("withheld turn %q", got)
	}
	if r := e.reported(); !strings.Contains(r, "did not fit") {
		t.Fatalf("the result was not withheld: %q", r)
	}
	e.restart()
	if got := replyOf(t, e.say(&id, "still there?")); got != "ok" {
		t.Fatalf("after the restart %q", got)
	}
	if r := e.reported(); r != "" {
		t.Fatalf("reports after the restart: %q", r)
	}
	chats := e.chats()
	last, prev := chats[len(chats)-1], chats[len(chats)-2]
	if last.Chat.Slot != 1 || prev.Chat.Slot != 1 || last.Chat.CacheN != prev.Chat.PromptTokens+prev.Chat.PredictedN {
		t.Fatalf("after the restart: slot %d, cache_n %d; before: slot %d, %d+%d", last.Chat.Slot, last.Chat.CacheN,
			prev.Chat.Slot, prev.Chat.PromptTokens, prev.Chat.PredictedN)
	}
	for i, c := range chats {
		if c.Status != 400 && strings.Contains(string(c.Body), "? ? ?") {
			t.Fatalf("request %d carries the refused message or the withheld result", i)
		}
	}
	recs := e.records(id, 0)
	if count[wire.RefusedRecord](recs) != 2 || count[wire.CacheLoss](recs) != 0 {
		t.Fatalf("log %#v", recs)
	}
}
