package session

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/wire"
)

func call(name, args string) fakellama.Reply {
	return fakellama.Reply{ToolCalls: []fakellama.ToolCall{{Name: name, Arguments: args}}}
}

func text(s string) fakellama.Reply { return fakellama.Reply{Content: s} }

// A session of three turns with tool calls, a restart, and an edited log.
func TestMultiTurnCacheAndRestart(t *testing.T) {
	port := &recPort{resp: func(wire.ToolRequest) wire.ToolResponse {
		return wire.ResultResponse{Content: "- buy milk\n- call mum", Class: wire.Private, Untrusted: false}
	}}
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(
		// Turn 1: clock, find_tool, call_tool, then an answer.
		call("clock", `{}`),
		fakellama.Reply{Reasoning: "I should look for a file tool.", Content: "Let me look.",
			ToolCalls: []fakellama.ToolCall{{Name: "find_tool", Arguments: `{"query":"read a file"}`}}},
		call("call_tool", `{"tool":"read_file","arguments":{"path":"/home/kyle/notes/todo.md"}}`),
		text("You need to buy milk and call mum."),
		// Turn 2.
		text("You're welcome."),
		// Turn 3, after a restart.
		call("clock", `{}`),
		text("It is morning."),
		// Turn 4, after an edit and a restart.
		text("Still here."),
	)}, port)

	evs := e.say(nil, "What is on my todo list?")
	id := sessionOf(t, evs)
	if !strings.HasPrefix(id.String(), "chat-1758096300") {
		t.Fatalf("session id %s", id)
	}
	if got := replyOf(t, evs); got != "You need to buy milk and call mum." {
		t.Fatalf("reply %q", got)
	}
	// The events: session, clock call and outcome, text, find_tool call and
	// outcome, read_file call and outcome, reply.
	var kinds []string
	for _, ev := range evs {
		switch v := ev.(type) {
		case wire.TurnSession:
			kinds = append(kinds, "session")
		case wire.TurnText:
			kinds = append(kinds, "text:"+v.Content)
		case wire.TurnToolCall:
			kinds = append(kinds, "call:"+v.Tool+":"+string(rune('0'+v.Call)))
		case wire.TurnToolOutcome:
			kinds = append(kinds, "outcome:"+v.Tool+":"+v.Status.String())
		case wire.TurnReply:
			kinds = append(kinds, "reply")
		}
	}
	want := "session call:clock:1 outcome:clock:result text:Let me look. call:find_tool:2 outcome:find_tool:result call:read_file:3 outcome:read_file:result reply"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if len(port.got) != 1 || port.got[0] != (wire.ToolRequest{Session: id, Call: 3, Tool: "read_file", Arguments: `{"path":"/home/kyle/notes/todo.md"}`}) {
		t.Fatalf("tool requests %+v", port.got)
	}

	if got := replyOf(t, e.say(&id, "Thanks!")); got != "You're welcome." {
		t.Fatalf("turn 2: %q", got)
	}
	before := e.chats()
	fullHits(t, before, 1)

	// Restart: the rebuilt request for the records the last request was
	// built from is byte for byte the request sent.
	e.restart()
	e.mgr.mu.Lock()
	s := &Session{id: id, cfg: &e.mgr.cfg, sem: make(chan struct{}, 1)}
	e.mgr.mu.Unlock()
	if err := s.open(t.Context()); err != nil {
		t.Fatal(err)
	}
	sent, err := sessionlog.LastSent(s.path)
	if err != nil || sent == nil {
		t.Fatalf("sent: %v %v", sent, err)
	}
	if rebuilt := s.req.BodyAt(sent.Records); !bytes.Equal(rebuilt, before[len(before)-1].Body) {
		t.Fatalf("rebuilt request differs from the one sent:\n%s\n%s", rebuilt, before[len(before)-1].Body)
	}
	s.close()

	evs = e.say(&id, "What time is it?")
	if got := replyOf(t, evs); got != "It is morning." {
		t.Fatalf("turn 3: %q", got)
	}
	// Call ids go on increasing after the restart.
	if c, ok := evs[1].(wire.TurnToolCall); !ok || c.Call != 4 {
		t.Fatalf("turn 3 call: %#v", evs[1])
	}
	all := e.chats()
	if n := fullHits(t, all, 1); n != len(all)-1 || n != 6 { // including the first request after the restart
		t.Fatalf("%d of %d requests checked", n, len(all))
	}
	recs := e.records(id, 0)
	if n := count[wire.CacheLoss](recs); n != 0 {
		t.Fatalf("%d cache_loss records", n)
	}
	if r := e.takeReports(); len(r) != 0 {
		t.Fatalf("reports: %q", r)
	}
	if n := count[wire.ToolResultRecord](recs); n != 4 {
		t.Fatalf("%d tool results", n)
	}

	// Edit one old record: the owner's first message.
	e.mgr.Close()
	path := sessionlog.Path(e.home, id, 0)
	data, _ := os.ReadFile(path)
	edited := strings.Replace(string(data), "What is on my todo list?", "What is on my todo list!", 1)
	if edited == string(data) {
		t.Fatal("nothing edited")
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if got := replyOf(t, e.say(&id, "Are you there?")); got != "Still here." {
		t.Fatalf("turn 4: %q", got)
	}
	reports := strings.Join(e.takeReports(), "\n")
	if !strings.Contains(reports, "the log no longer renders the request last sent") || !strings.Contains(reports, "a cache loss") {
		t.Fatalf("reports after the edit:\n%s", reports)
	}
	recs = e.records(id, 0)
	var loss *wire.CacheLoss
	for _, r := range recs {
		if v, ok := r.(wire.CacheLoss); ok {
			loss = &v
		}
	}
	last := e.chats()[len(e.chats())-1].Chat
	prev := all[len(all)-1].Chat
	if loss == nil || loss.Got != uint64(last.CacheN) || loss.Expected != uint64(prev.PromptTokens+prev.PredictedN-1) || loss.Got >= loss.Expected {
		t.Fatalf("cache loss %+v; request %+v after %+v", loss, last, prev)
	}
}

// With no port, call_tool fails with the spec's words and the turn goes on.
func TestNoBroker(t *testing.T) {
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(
		call("call_tool", `{"tool":"shell","arguments":{"command":"ls"}}`),
		text("I cannot run commands here."),
	)}, nil)
	evs := e.say(nil, "list files")
	replyOf(t, evs)
	out, ok := evs[2].(wire.TurnToolOutcome)
	if !ok || out.Status != wire.ToolFailed || out.Tool != "shell" {
		t.Fatalf("outcome %#v", evs[2])
	}
	recs := e.records(sessionOf(t, evs), 0)
	for _, r := range recs {
		if v, ok := r.(wire.ToolResultRecord); ok && v.Content != "no tool broker is configured" {
			t.Fatalf("result %q", v.Content)
		}
	}
}

// Denials reach the model as the spec's text, class public, trusted.
func TestDenialReachesModel(t *testing.T) {
	port := &recPort{resp: func(wire.ToolRequest) wire.ToolResponse { return wire.DeniedResponse{Reason: wire.NoGrant} }}
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(
		call("call_tool", `{"tool":"http_fetch","arguments":{"url":"https://example.com/"}}`),
		text("I may not fetch that."),
	)}, port)
	evs := e.say(nil, "fetch example.com")
	replyOf(t, evs)
	out := evs[2].(wire.TurnToolOutcome)
	if out.Status != wire.ToolDenied || out.Reason == nil || *out.Reason != wire.NoGrant || out.Class != wire.Public {
		t.Fatalf("outcome %#v", out)
	}
	body := string(e.chats()[1].Body)
	if !strings.Contains(body, `{"role":"tool","tool_call_id":"fake0000000000000000000000010000","content":"Denied: no grant allows this call."}`) {
		t.Fatalf("request: %s", body)
	}
}

func TestStepLimit(t *testing.T) {
	var replies []fakellama.Reply
	for range 3 {
		replies = append(replies, call("clock", `{}`))
	}
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(append(replies, text("ok"))...)}, nil)
	e.cfg.MaxSteps = 3
	e.restart()
	evs := e.say(nil, "loop")
	if msg := failedOf(t, evs); !strings.Contains(msg, "limit of 3 model requests") {
		t.Fatalf("failed: %q", msg)
	}
	// The session stays usable.
	id := sessionOf(t, evs)
	if got := replyOf(t, e.say(&id, "stop")); got != "ok" {
		t.Fatalf("next turn %q", got)
	}
}

func TestUnknownAndDamagedSessions(t *testing.T) {
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(text("hi"), text("hi again"))}, nil)
	ghost, _ := wire.NewSessionID("chat-404")
	evs := e.say(&ghost, "hello?")
	if msg := failedOf(t, evs); !strings.Contains(msg, "no such session: chat-404") || len(evs) != 1 {
		t.Fatalf("unknown session: %#v", evs)
	}
	id := sessionOf(t, e.say(nil, "hello"))
	e.mgr.Close()
	path := sessionlog.Path(e.home, id, 0)
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[1] = "{not json}\n"
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
	e.restart()
	msg := failedOf(t, e.say(&id, "hello again"))
	if !strings.Contains(msg, path+":2:") || !strings.HasSuffix(msg, "see docs/runbook.md#session-log-damaged") {
		t.Fatalf("damaged: %q", msg)
	}
	// Other sessions are not affected.
	if got := replyOf(t, e.say(nil, "new")); got != "hi again" {
		t.Fatalf("new session %q", got)
	}
}

func TestTornLineAndDanglingCalls(t *testing.T) {
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(text("one"), text("two"))}, nil)
	id := sessionOf(t, e.say(nil, "first"))
	e.mgr.Close()
	// A crash after the model's tool call was logged, then a torn write.
	path := sessionlog.Path(e.home, id, 0)
	w, err := sessionlog.OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(wire.AssistantRecord{Time: 1758096400000, ToolCalls: []wire.ToolCall{{ID: "x1", Name: "clock", Arguments: "{}"}}})
	w.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"type":"tool_result","time":"2025-09-17T08:0`)
	f.Close()

	e.restart()
	if got := replyOf(t, e.say(&id, "second")); got != "two" {
		t.Fatalf("after recovery %q", got)
	}
	if r := strings.Join(e.takeReports(), "\n"); !strings.Contains(r, "kept a torn final line") || !strings.HasSuffix(r, "see docs/runbook.md#session-log-torn") {
		t.Fatalf("reports %q", r)
	}
	recs := e.records(id, 0)
	res, ok := recs[len(recs)-3].(wire.ToolResultRecord)
	if !ok || res.ToolCallID != "x1" || res.Content != Interrupted || res.Call != 1 {
		t.Fatalf("interrupted call's result: %#v", recs[len(recs)-3])
	}
	if _, ok := recs[len(recs)-2].(wire.UserRecord); !ok {
		t.Fatalf("then the user's message: %#v", recs[len(recs)-2])
	}
}
