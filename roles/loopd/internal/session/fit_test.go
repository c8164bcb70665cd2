package session

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/wire"
)

// The fake's two tokenizers (its chat template's and its /tokenize) agree
// on text made of punctuation and spaces: one token per byte. The tests
// size messages with it, so the split of a refused request into the
// message and the rest is exact.
func filler(tokens int) string { return strings.Repeat("? ", tokens/2) }

// fitEnv is an env whose context is nctx tokens for both the fake and
// loopd, with an answer limit and the token count through the fake's
// /tokenize, as serve sets it up.
func fitEnv(t *testing.T, nctx, maxAnswer int, script fakellama.Script, port *recPort) *env {
	t.Helper()
	var e *env
	if port == nil {
		e = newEnv(t, fakellama.Options{NCtx: nctx, Script: script}, nil)
	} else {
		e = newEnv(t, fakellama.Options{NCtx: nctx, Script: script}, port)
	}
	e.cfg.NCtx, e.cfg.MaxAnswerTokens = nctx, maxAnswer
	e.cfg.Tokens = func(ctx context.Context, text string) (int, error) {
		ids, err := e.client.TokenizeEach(ctx, []string{text}, true)
		if err != nil {
			return 0, err
		}
		return len(ids[0]), nil
	}
	e.restart()
	return e
}

// reported returns the reports so far joined, and clears them.
func (e *env) reported() string { return strings.Join(e.takeReports(), "\n") }

// A message larger than the context is refused with its size and the
// limit, recorded as refused, and never sent again: the next turn works,
// hits the cache in full, and so does a turn after a restart.
func TestMessageLargerThanContext(t *testing.T) {
	// The fake asks its script before it measures the prompt, so the
	// refused request takes a reply too.
	e := fitEnv(t, 1000, 64, fakellama.Queue(text("Hello."), text("refused"), text("Hi again."), text("Still here.")), nil)
	id := sessionOf(t, e.say(nil, "hello"))
	huge := filler(600)
	evs := e.say(&id, huge)
	msg := failedOf(t, evs)
	nPrompt := 0
	_, after, _ := strings.Cut(msg, "the request with it would be ")
	if _, err := fmt.Sscanf(after, "%d tokens", &nPrompt); err != nil {
		t.Fatalf("failed %q: %v", msg, err)
	}
	for _, want := range []string{"your message was not sent: it is about 600 tokens",
		"more than the model's context of 1000",
		fmt.Sprintf("a message of up to about %d tokens fits now", 1000-(nPrompt-600)-64),
		"marked refused, and will not be sent again"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("failed %q, want %q", msg, want)
		}
	}
	if !strings.HasSuffix(msg, "see docs/runbook.md#message-too-long") {
		t.Fatalf("failed %q", msg)
	}
	recs := e.records(id, 0)
	if u, ok := recs[len(recs)-2].(wire.UserRecord); !ok || u.Content != huge {
		t.Fatalf("the message is kept: %#v", recs[len(recs)-2])
	}
	if r, ok := recs[len(recs)-1].(wire.RefusedRecord); !ok || r.PromptTokens != uint64(nPrompt) || r.NCtx != 1000 {
		t.Fatalf("then refused: %#v", recs[len(recs)-1])
	}

	if got := replyOf(t, e.say(&id, "hi again")); got != "Hi again." {
		t.Fatalf("next turn %q", got)
	}
	e.restart()
	if got := replyOf(t, e.say(&id, "still there?")); got != "Still here." {
		t.Fatalf("after restart %q", got)
	}
	chats := e.chats()
	if len(chats) != 4 || chats[1].Status != 400 {
		t.Fatalf("%d requests", len(chats))
	}
	for i, c := range chats {
		if i != 1 && strings.Contains(string(c.Body), "? ? ?") {
			t.Fatalf("request %d carries the refused message", i)
		}
	}
	if n := fullHits(t, chats, 2); n != 2 {
		t.Fatalf("%d requests checked", n)
	}
	if r := e.reported(); r != "" || count[wire.CacheLoss](e.records(id, 0)) != 0 {
		t.Fatalf("reports %q", r)
	}
}

// The lock of issue 16: with a context barely larger than the prompt
// prefix, one turn fills the epoch, the next epoch starts from the prefix
// and a summary, and its first request does not fit. The old loopd kept
// that message and failed every turn after it. Now it is refused and the
// owner is told that the epoch's start is too large and how to fix it;
// a message that fits is answered; and once the context is larger, the
// session goes on without ever sending the refused message.
func TestEpochRolloverWithSmallContext(t *testing.T) {
	script := func(_ int, req *fakellama.ChatRequest) fakellama.Reply {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(string(last.Content), "The conversation is about to be cut short") {
			return text("We said hello.")
		}
		return text(strings.Repeat("Hello there. ", 40))
	}
	e := fitEnv(t, 700, 512, script, nil)
	evs := e.say(nil, "hi")
	id := sessionOf(t, evs)
	if c, ok := evs[1].(wire.TurnAnswerCut); !ok || c.Reason != wire.CutContextFull {
		t.Fatalf("turn 1 %#v", evs)
	}
	replyOf(t, evs)

	// Epoch 0 is full: the summary does not fit either, so epoch 1 starts
	// from the plain one, and the message does not fit after it.
	evs = e.say(&id, filler(100))
	msg := failedOf(t, evs)
	if evs[0].(wire.TurnSession).Epoch != 1 || !strings.Contains(msg, "epoch 1's start (the system prompt, memory/core.md and the tool "+
		"definitions, and the summary of epoch 0) takes about") || !strings.Contains(msg, "past the 525 at which an epoch ends ([model] epoch_percent of the model's 700)") ||
		!strings.Contains(msg, "Your message (about 100 tokens) was not sent") || !strings.HasSuffix(msg, "see docs/runbook.md#epoch-start-too-large") {
		t.Fatalf("turn 2: %q", msg)
	}
	recs := e.records(id, 1)
	if _, ok := recs[len(recs)-1].(wire.RefusedRecord); !ok || !strings.Contains(recs[1].(wire.UserRecord).Content, "There is no summary") {
		t.Fatalf("epoch 1: %#v", recs)
	}
	// Not locked: a short message is answered (its answer fills the
	// context again).
	evs = e.say(&id, "ok")
	replyOf(t, evs)

	// The owner gives the model a larger context and restarts loopd.
	e.swapFake(fakellama.Options{NCtx: 4000, Script: fakellama.Queue(text("Welcome back."))})
	e.cfg.NCtx = 4000
	e.restart()
	evs = e.say(&id, "hello again")
	if got := replyOf(t, evs); got != "Welcome back." {
		t.Fatalf("after the fix: %#v", evs)
	}
	for _, c := range e.chats() {
		if strings.Contains(string(c.Body), "? ? ?") {
			t.Fatal("a request carries the refused message")
		}
	}
}

// A turn that cannot know the epoch is full (a restart lost the .sent
// file) finds it out from the refusal: the epoch ends with a summary and
// the message is answered in the next.
func TestFullEpochFoundByRefusal(t *testing.T) {
	script := func(_ int, req *fakellama.ChatRequest) fakellama.Reply {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(string(last.Content), "The conversation is about to be cut short") {
			return text("We said hello at length.")
		}
		if len(req.Messages) == 2 {
			return text(strings.Repeat("word ", 100))
		}
		return text("Answered in the next epoch.")
	}
	e := fitEnv(t, 1000, 512, script, nil)
	id := sessionOf(t, e.say(nil, "hi"))
	e.mgr.Close()
	if err := os.Remove(sessionlog.SentPath(sessionlog.Path(e.home, id, 0))); err != nil {
		t.Fatal(err)
	}
	e.restart()
	evs := e.say(&id, filler(300))
	if got := replyOf(t, evs); got != "Answered in the next epoch." {
		t.Fatalf("%#v", evs)
	}
	old := e.records(id, 0)
	if _, ok := old[len(old)-2].(wire.RefusedRecord); !ok {
		t.Fatalf("epoch 0 ends %#v", old[len(old)-3:])
	}
	if end, ok := old[len(old)-1].(wire.EpochEnd); !ok || end.Summary != "We said hello at length." {
		t.Fatalf("epoch 0 ends %#v", old[len(old)-1])
	}
	recs := e.records(id, 1)
	if u, ok := recs[2].(wire.UserRecord); !ok || u.Content != filler(300) {
		t.Fatalf("epoch 1: %#v", recs)
	}
	if r := e.reported(); !strings.Contains(r, "the epoch ends here, and the message goes to the next") {
		t.Fatalf("reports %q", r)
	}
}

// A tool result that does not fit the context left is withheld: the model
// reads a note with its size and the room, the owner sees the outcome as
// truncated, the log keeps the result withdrawn by a refused record, and a
// small result of the same step still reaches the model.
func TestToolResultTooLarge(t *testing.T) {
	port := &recPort{resp: func(wire.ToolRequest) wire.ToolResponse {
		return wire.ResultResponse{Content: filler(600), Class: wire.Private, Untrusted: true}
	}}
	e := fitEnv(t, 1200, 64, fakellama.Queue(
		fakellama.Reply{ToolCalls: []fakellama.ToolCall{{Name: "clock", Arguments: `{}`},
			{Name: "call_tool", Arguments: `{"tool":"read_file","arguments":{"path":"/n/big.md"}}`}}},
		text("The file is too large; I will ask for part of it."),
		text("ok"),
	), port)
	evs := e.say(nil, "read big.md")
	replyOf(t, evs)
	id := sessionOf(t, evs)
	var outs []wire.TurnToolOutcome
	for _, ev := range evs {
		if o, ok := ev.(wire.TurnToolOutcome); ok {
			outs = append(outs, o)
		}
	}
	if len(outs) != 2 || outs[0].Truncated || !outs[1].Truncated || outs[1].Status != wire.ToolResult {
		t.Fatalf("outcomes %#v", outs)
	}
	body := string(e.chats()[1].Body)
	if strings.Contains(body, "? ? ?") || !strings.Contains(body, "This result was not given to you: it is about 600 tokens long, and only ") ||
		!strings.Contains(body, `"content":"20`) { // the clock's answer
		t.Fatalf("request after the results: %s", body)
	}
	recs := e.records(id, 0)
	n := len(recs)
	orig, ok1 := recs[n-4].(wire.ToolResultRecord)
	_, ok2 := recs[n-3].(wire.RefusedRecord)
	note, ok3 := recs[n-2].(wire.ToolResultRecord)
	if !ok1 || !ok2 || !ok3 || orig.Content != filler(600) || note.Call != orig.Call || note.ToolCallID != orig.ToolCallID ||
		!note.Truncated || note.Class != wire.Private || !note.Untrusted {
		t.Fatalf("log %#v", recs[n-4:])
	}
	if r := e.reported(); !strings.Contains(r, "did not fit") || !strings.HasSuffix(r, "see docs/runbook.md#tool-result-too-large") {
		t.Fatalf("reports %q", r)
	}
	// A restart rebuilds the same request: no report, no interrupted call.
	e.restart()
	if got := replyOf(t, e.say(&id, "fine")); got != "ok" {
		t.Fatalf("after restart %q", got)
	}
	if r := e.reported(); r != "" || count[wire.ToolResultRecord](e.records(id, 0)) != 3 {
		t.Fatalf("reports %q", r)
	}
}

// swapFake replaces the env's fake llama-server with a new one on the same
// socket: the model server restarted with other options.
func (e *env) swapFake(opts fakellama.Options) {
	e.t.Helper()
	e.fake.Close()
	sock := filepath.Join(filepath.Dir(e.home), "infer.sock")
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.fake = fakellama.New(opts)
	done := make(chan error, 1)
	go func() { done <- e.fake.Serve(ln) }()
	fake := e.fake
	e.t.Cleanup(func() {
		fake.Close()
		if err := <-done; err != nil {
			e.t.Error(err)
		}
	})
}

// When the measure of a tool result is wrong and the server refuses the
// request that carries it, the turn stops, and the next message finds the
// epoch full and starts a new one: the session is not locked.
func TestToolResultMismeasured(t *testing.T) {
	port := &recPort{resp: func(wire.ToolRequest) wire.ToolResponse {
		return wire.ResultResponse{Content: filler(800), Class: wire.Public}
	}}
	e := fitEnv(t, 1200, 64, fakellama.Queue(
		call("call_tool", `{"tool":"read_file","arguments":{"path":"/n/big.md"}}`),
		text("refused"), text("refused again"), text("summary refused"), text("The next epoch answers.")), port)
	e.cfg.Tokens = func(context.Context, string) (int, error) { return 1, nil } // wrong
	e.restart()
	evs := e.say(nil, "read big.md")
	id := sessionOf(t, evs)
	if msg := failedOf(t, evs); !strings.Contains(msg, "refused the request with this step's tool results as longer than its context") ||
		!strings.HasSuffix(msg, "see docs/runbook.md#tool-result-too-large") {
		t.Fatalf("turn 1: %q", msg)
	}
	evs = e.say(&id, "go on")
	if got := replyOf(t, evs); got != "The next epoch answers." {
		t.Fatalf("turn 2: %#v", evs)
	}
	if recs := e.records(id, 1); len(recs) != 4 {
		t.Fatalf("epoch 1: %#v", recs)
	}
}
