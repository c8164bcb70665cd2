package session

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/wire"
)

// sessions names a test's sessions: the first say of a name starts a new
// session, later ones continue it.
type sessions struct {
	e   *env
	ids map[string]wire.SessionID
}

func (ss *sessions) say(name string) {
	ss.e.t.Helper()
	var id *wire.SessionID
	if v, ok := ss.ids[name]; ok {
		id = &v
	}
	evs := ss.e.say(id, "hello from "+name)
	replyOf(ss.e.t, evs)
	ss.ids[name] = sessionOf(ss.e.t, evs)
}

// turn is one expected request: its slot, and whether the session kept
// the slot (so the request must find its whole last request cached).
type turn struct {
	who  string
	slot int
	hit  bool
}

func echo(n int, _ *fakellama.ChatRequest) fakellama.Reply {
	return text(fmt.Sprintf("answer %d", n))
}

// checkTurns checks each request against turns: the slot it named, and
// cache_n: the whole previous request and answer on that slot when the
// session kept the slot, less than that when it did not (a real miss).
// No session logs a cache loss, and nothing is reported: a miss after a
// move is expected.
func checkTurns(t *testing.T, e *env, ss *sessions, turns []turn) {
	t.Helper()
	reqs := e.chats()
	if len(reqs) != len(turns) {
		t.Fatalf("%d requests for %d turns", len(reqs), len(turns))
	}
	prev := map[int]*fakellama.ChatStats{}
	for i, r := range reqs {
		tn, c := turns[i], r.Chat
		if c.Slot != tn.slot || c.Waited {
			t.Errorf("turn %d (%s): slot %d waited %v, want slot %d", i, tn.who, c.Slot, c.Waited, tn.slot)
		}
		p := prev[c.Slot]
		switch {
		case tn.hit && (p == nil || c.CacheN != p.PromptTokens+p.PredictedN):
			t.Errorf("turn %d (%s): cache_n %d, want the slot's whole previous request and answer (%+v)", i, tn.who, c.CacheN, p)
		case !tn.hit && p != nil && c.CacheN >= p.PromptTokens+p.PredictedN:
			t.Errorf("turn %d (%s): a full hit on a slot another session used", i, tn.who)
		}
		prev[c.Slot] = c
	}
	for name, id := range ss.ids {
		if n := count[wire.CacheLoss](e.records(id, 0)); n != 0 {
			t.Errorf("session %s logged %d cache losses", name, n)
		}
	}
	if r := e.takeReports(); len(r) != 0 {
		t.Errorf("reports: %q", r)
	}
}

func TestSessionsShareSlotsLRU(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slots int
		turns []turn
	}{
		{"two sessions taking turns keep their slots", 2, []turn{
			{"A", 0, false}, {"B", 1, false}, {"A", 0, true}, {"B", 1, true}, {"A", 0, true}, {"B", 1, true},
		}},
		{"two sessions on one slot evict each other", 1, []turn{
			{"A", 0, false}, {"B", 0, false}, {"A", 0, false}, {"B", 0, false}, {"B", 0, true},
		}},
		{"three sessions on two slots: the least recently used slot goes", 2, []turn{
			{"A", 0, false}, {"B", 1, false},
			{"C", 0, false}, // A's slot, used least recently
			{"B", 1, true},
			{"A", 0, false}, // A returns after its eviction: C's slot is now the LRU
			{"C", 1, false}, // and C gets B's
			{"A", 0, true}, {"C", 1, true},
		}},
		{"more sessions than slots, one turn each, then back", 3, []turn{
			{"A", 0, false}, {"B", 1, false}, {"C", 2, false}, {"D", 0, false}, {"E", 1, false},
			{"C", 2, true}, {"A", 0, false}, {"E", 1, true}, {"D", 2, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakellama.Options{Slots: tc.slots, Script: echo}, nil)
			e.cfg.Slots = tc.slots
			e.restart()
			ss := &sessions{e: e, ids: map[string]wire.SessionID{}}
			first := map[string]int{}
			for _, tn := range tc.turns {
				if _, ok := ss.ids[tn.who]; !ok {
					first[tn.who] = tn.slot
				}
				ss.say(tn.who)
			}
			checkTurns(t, e, ss, tc.turns)
			// SessionStart records the slot the session was given first.
			for name, id := range ss.ids {
				if got := e.records(id, 0)[0].(wire.SessionStart).Slot; int(got) != first[name] {
					t.Errorf("session %s: SessionStart slot %d, want %d", name, got, first[name])
				}
			}
		})
	}
}

// After a restart the mapping starts again, but a session takes back the
// slot its log names as long as no session has used it since: two sessions
// resuming in either order keep full reuse. A new session that comes first
// takes the least recently used slot, and the sessions whose caches it and
// then they displaced miss once, as expected, without a cache loss.
func TestSlotsAfterRestart(t *testing.T) {
	ab := []turn{{"A", 0, false}, {"B", 1, false}, {"A", 0, true}}
	for _, tc := range []struct {
		name          string
		before, after []turn
	}{
		{"in the other order", ab, []turn{{"B", 1, true}, {"A", 0, true}, {"B", 1, true}}},
		{"in the same order", ab, []turn{{"A", 0, true}, {"B", 1, true}}},
		{"a new session first", ab, []turn{{"N", 0, false}, {"A", 1, false}, {"B", 0, false}, {"A", 1, true}}},
		// A's epoch began on slot 0 and moved to 1: the rebuilt request
		// names 1, as the last one sent did, and A goes back there.
		{"after a move within the epoch",
			[]turn{{"A", 0, false}, {"B", 1, false}, {"C", 0, false}, {"A", 1, false}},
			[]turn{{"A", 1, true}, {"C", 0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakellama.Options{Slots: 2, Script: echo}, nil)
			e.cfg.Slots = 2
			e.restart()
			ss := &sessions{e: e, ids: map[string]wire.SessionID{}}
			for _, tn := range tc.before {
				ss.say(tn.who)
			}
			e.restart()
			for _, tn := range tc.after {
				ss.say(tn.who)
			}
			checkTurns(t, e, ss, append(slices.Clone(tc.before), tc.after...))
		})
	}
}

// A log written before sessions shared the slots (.sent entries without a
// slot; SessionStart names the configured slot every request went to)
// still loads: the rebuilt request is the one sent, and the session takes
// that slot back with full reuse.
func TestOldLogsKeepTheirSlot(t *testing.T) {
	e := newEnv(t, fakellama.Options{Slots: 2, Script: echo}, nil)
	e.cfg.Slots = 2
	e.restart()
	ss := &sessions{e: e, ids: map[string]wire.SessionID{}}
	for _, who := range []string{"X", "A", "A"} { // A is on slot 1
		ss.say(who)
	}
	sent := sessionlog.SentPath(sessionlog.Path(e.home, ss.ids["A"], 0))
	b, err := os.ReadFile(sent)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(` slot \d+\n`).ReplaceAll(b, []byte("\n"))
	if strings.Contains(string(old), "slot") || !strings.Contains(string(b), " slot 1\n") {
		t.Fatalf(".sent before and after:\n%s\n%s", b, old)
	}
	if err := os.WriteFile(sent, old, 0o600); err != nil {
		t.Fatal(err)
	}
	e.restart()
	ss.say("A")
	checkTurns(t, e, ss, []turn{{"X", 0, false}, {"A", 1, false}, {"A", 1, true}, {"A", 1, true}})
}

// barrier is a Script that holds each request until n are in flight at
// once, or answers 500 after a while: it proves loopd sends them
// concurrently.
func barrier(n int) fakellama.Script {
	var mu sync.Mutex
	in := 0
	all := make(chan struct{})
	return func(call int, _ *fakellama.ChatRequest) fakellama.Reply {
		mu.Lock()
		if in++; in == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return text(fmt.Sprintf("answer %d", call))
		case <-time.After(3 * time.Second):
			return fakellama.Reply{Fault: fakellama.Fault{Status: 500, Message: "the requests never were in flight together"}}
		}
	}
}

// Sessions on different slots are served at the same time: their
// requests reach the server together, each on its own slot, and none
// waits for a busy slot.
func TestSessionsOnTwoSlotsAtOnce(t *testing.T) {
	e := newEnv(t, fakellama.Options{Slots: 2, Script: barrier(2)}, nil)
	e.cfg.Slots = 2
	e.client.ReplyTimeout = 5 * time.Second
	e.restart()
	var wg sync.WaitGroup
	replies := make([]wire.TurnEvent, 2)
	for i := range 2 {
		wg.Go(func() {
			e.mgr.Say(context.Background(), nil, "hello", func(ev wire.TurnEvent) { replies[i] = ev })
		})
	}
	wg.Wait()
	for i, r := range replies {
		if _, ok := r.(wire.TurnReply); !ok {
			t.Fatalf("turn %d: %#v", i, r)
		}
	}
	reqs := e.chats()
	if len(reqs) != 2 || reqs[0].Chat.Slot == reqs[1].Chat.Slot || reqs[0].Chat.Waited || reqs[1].Chat.Waited {
		t.Fatalf("requests %+v %+v", reqs[0].Chat, reqs[1].Chat)
	}
}

// With more turns at once than slots, loopd holds back the turns that
// find every slot busy until one comes free, so no request ever waits
// inside the server on a slot another session holds; every turn is
// answered.
func TestMoreTurnsThanSlots(t *testing.T) {
	slow := func(n int, _ *fakellama.ChatRequest) fakellama.Reply {
		return fakellama.Reply{Content: fmt.Sprintf("answer %d", n), Fault: fakellama.Fault{FirstByteDelay: 30 * time.Millisecond}}
	}
	e := newEnv(t, fakellama.Options{Slots: 2, Script: slow}, nil)
	e.cfg.Slots = 2
	e.client.ReplyTimeout = 5 * time.Second
	e.restart()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for range 5 {
		wg.Go(func() {
			var id *wire.SessionID
			for range 4 {
				var last wire.TurnEvent
				e.mgr.Say(context.Background(), id, "hello", func(ev wire.TurnEvent) {
					if s, ok := ev.(wire.TurnSession); ok {
						id = &s.Session
					}
					last = ev
				})
				if f, ok := last.(wire.TurnFailed); ok {
					mu.Lock()
					failed = append(failed, f.Message)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("failed turns: %q", failed)
	}
	reqs := e.chats()
	if len(reqs) != 20 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.Chat.Waited {
			t.Errorf("request %d waited inside the server for slot %d", i, r.Chat.Slot)
		}
	}
}

// A turn that waits for a slot stops waiting when its context ends, and
// says why.
func TestSlotWaitEnds(t *testing.T) {
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(
		fakellama.Reply{Content: "slow", Fault: fakellama.Fault{FirstByteDelay: 300 * time.Millisecond}},
	)}, nil)
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.mgr.Say(context.Background(), nil, "first", func(ev wire.TurnEvent) {
			if _, ok := ev.(wire.TurnSession); ok {
				close(started)
			}
		})
	}()
	<-started
	for len(e.fake.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var last wire.TurnEvent
	e.mgr.Say(ctx, nil, "second", func(ev wire.TurnEvent) { last = ev })
	f, ok := last.(wire.TurnFailed)
	if !ok || !strings.Contains(f.Message, "the turn ended while it waited for a free model server slot") {
		t.Fatalf("second turn: %#v", last)
	}
	<-done
	if n := len(e.chats()); n != 1 {
		t.Fatalf("%d requests reached the server", n)
	}
}
