package session

import (
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/wire"
)

// summarising answers the summary request with a summary and everything
// else with a long answer, so the context fills in a few turns.
func summarising(n *int) fakellama.Script {
	return func(_ int, req *fakellama.ChatRequest) fakellama.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.Contains(string(last.Content), "The conversation is about to be cut short") {
			*n++
			return text("The owner is planning a trip to Lisbon in May.")
		}
		return text(strings.Repeat("Lisbon is lovely in May. ", 20))
	}
}

func TestEpochEndsWithSummary(t *testing.T) {
	summaries := 0
	e := newEnv(t, fakellama.Options{NCtx: 2000, Script: summarising(&summaries)}, nil)
	e.cfg.NCtx, e.cfg.EpochPercent = 2000, 50
	e.restart()
	evs := e.say(nil, "Plan my trip.")
	id := sessionOf(t, evs)
	turns := 1
	for ; turns < 20; turns++ {
		evs = e.say(&id, "Tell me more.")
		replyOf(t, evs)
		if evs[0].(wire.TurnSession).Epoch == 1 {
			break
		}
	}
	if turns == 20 || summaries != 1 {
		t.Fatalf("after %d turns, %d summaries", turns, summaries)
	}
	old := e.records(id, 0)
	end, ok := old[len(old)-1].(wire.EpochEnd)
	if !ok || end.Next != 1 || end.Summary != "The owner is planning a trip to Lisbon in May." {
		t.Fatalf("epoch 0 ends with %#v", old[len(old)-1])
	}
	recs := e.records(id, 1)
	start, ok := recs[0].(wire.SessionStart)
	if !ok || start.Epoch != 1 || start.Session != id || start.Baseline != old[0].(wire.SessionStart).Baseline {
		t.Fatalf("epoch 1 starts with %#v", recs[0])
	}
	if u, ok := recs[1].(wire.UserRecord); !ok || u.Content != SummaryMessage(0, end.Summary) {
		t.Fatalf("then %#v", recs[1])
	}
	if u, ok := recs[2].(wire.UserRecord); !ok || u.Content != "Tell me more." {
		t.Fatalf("then %#v", recs[2])
	}
	// The summary request replayed the epoch and hit the cache in full.
	chats := e.chats()
	fullHits(t, chats[:len(chats)-1], 1)
	// The new epoch's first request is the prefix, the summary and the
	// owner's message: nothing of the old history.
	body := string(chats[len(chats)-1].Body)
	if strings.Contains(body, "Plan my trip.") || !strings.Contains(body, "Lisbon in May.") {
		t.Fatalf("epoch 1 request: %s", body)
	}

	// A restart goes on in epoch 1.
	e.restart()
	evs = e.say(&id, "And June?")
	replyOf(t, evs)
	if evs[0].(wire.TurnSession).Epoch != 1 {
		t.Fatalf("after restart: %#v", evs[0])
	}
}

// A crash between epoch_end and the next epoch's file: the next say starts
// the epoch from the summary without asking the model again.
func TestEpochStartAfterCrash(t *testing.T) {
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(text("one"), text("two"))}, nil)
	id := sessionOf(t, e.say(nil, "first"))
	e.mgr.Close()
	w, err := sessionlog.OpenWriter(sessionlog.Path(e.home, id, 0))
	if err != nil {
		t.Fatal(err)
	}
	w.Append(wire.EpochEnd{Time: 1758096400000, Next: 1, Summary: "We said hello."})
	w.Close()
	e.restart()
	evs := e.say(&id, "second")
	if got := replyOf(t, evs); got != "two" || evs[0].(wire.TurnSession).Epoch != 1 {
		t.Fatalf("%#v", evs)
	}
	recs := e.records(id, 1)
	if len(recs) != 4 || recs[1].(wire.UserRecord).Content != SummaryMessage(0, "We said hello.") {
		t.Fatalf("epoch 1: %#v", recs)
	}
}

// A turn whose tool results fill the context stops, and the next message
// starts a new epoch.
func TestContextFullMidTurn(t *testing.T) {
	long := `{"query":"` + strings.Repeat("a b ", 300) + `"}`
	summaries := 0
	script := summarising(&summaries)
	calls := 0
	e := newEnv(t, fakellama.Options{NCtx: 3000, Script: func(n int, req *fakellama.ChatRequest) fakellama.Reply {
		if calls == 0 {
			calls++
			return call("find_tool", long)
		}
		return script(n, req)
	}}, nil)
	e.cfg.NCtx, e.cfg.EpochPercent = 3000, 50
	e.restart()
	evs := e.say(nil, "search")
	if msg := failedOf(t, evs); !strings.Contains(msg, "the context is nearly full") {
		t.Fatalf("failed %q", msg)
	}
	id := sessionOf(t, evs)
	evs = e.say(&id, "go on")
	replyOf(t, evs)
	if evs[0].(wire.TurnSession).Epoch != 1 || summaries != 1 {
		t.Fatalf("next turn %#v, %d summaries", evs[0], summaries)
	}
}
