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

// dropLastLine removes the last record of an epoch's log: what a loopd
// killed just before it wrote that record leaves behind.
func (e *env) dropLastLine(id wire.SessionID, epoch wire.Epoch) wire.LogRecord {
	e.t.Helper()
	recs := e.records(id, epoch)
	path := sessionlog.Path(e.home, id, epoch)
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	i := bytes.LastIndexByte(b[:len(b)-1], '\n')
	if err := os.WriteFile(path, b[:i+1], 0o600); err != nil {
		e.t.Fatal(err)
	}
	return recs[len(recs)-1]
}

// A loopd killed between the server's refusal of an epoch's first message
// and the refused record leaves that message in the epoch, unanswered and
// not withdrawn. The next message's request carries both and is refused
// too: the epoch's history is what does not fit, so the epoch ends and the
// message is answered in the next, rather than every message from then on
// being refused as if the epoch's start were too large.
func TestCrashBeforeRefusedOfFirstMessage(t *testing.T) {
	script := func(_ int, req *fakellama.ChatRequest) fakellama.Reply {
		return text("Answered.")
	}
	e := fitEnv(t, 1000, 64, script, nil)
	huge := filler(1200)
	evs := e.say(nil, huge)
	id := sessionOf(t, evs)
	failedOf(t, evs)
	e.mgr.Close()
	if _, ok := e.dropLastLine(id, 0).(wire.RefusedRecord); !ok {
		t.Fatal("the turn did not end with a refused record")
	}
	e.restart()
	e.takeReports()
	for i, msg := range []string{"hi", "hello"} {
		evs = e.say(&id, msg)
		if r, ok := evs[len(evs)-1].(wire.TurnReply); !ok || r.Content != "Answered." {
			t.Fatalf("message %d after the restart: %#v", i, evs[len(evs)-1])
		}
	}
	if recs := e.records(id, 1); count[wire.RefusedRecord](recs) != 0 || count[wire.AssistantRecord](recs) != 2 {
		t.Fatalf("epoch 1: %#v", recs)
	}
	if r := e.reported(); !strings.Contains(r, "the epoch ends here, and the message goes to the next") {
		t.Fatalf("reports %q", r)
	}
}

// A loopd killed between an answer_cut record and the answer it describes
// leaves answer_cut last. The session goes on from there (the answer was
// never recorded, so no request replays it), and its log must keep
// loading after the next turn's records follow the lone answer_cut.
func TestCrashBetweenAnswerCutAndAnswer(t *testing.T) {
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(
		text(strings.Repeat("word ", 20)), text("Short."), text("Still short."))}, nil)
	e.cfg.MaxAnswerTokens = 8
	e.restart()
	id := sessionOf(t, e.say(nil, "talk"))
	e.mgr.Close()
	if _, ok := e.dropLastLine(id, 0).(wire.AssistantRecord); !ok {
		t.Fatal("the turn did not end with its answer")
	}
	e.restart()
	if got := replyOf(t, e.say(&id, "and?")); got != "Short." {
		t.Fatalf("after the crash %q", got)
	}
	e.restart()
	if got := replyOf(t, e.say(&id, "more?")); got != "Still short." {
		t.Fatalf("after another restart %q", got)
	}
	if r := e.reported(); strings.Contains(r, "session-rebuild-differs") {
		t.Fatalf("reports %q", r)
	}
}
