package slots

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// step is one request in a table: session who asks (with a hint) and
// which slot it must get, kept or not. Every request is released before
// the next one unless hold is set.
type step struct {
	who  string
	hint int
	slot uint32
	kept bool
	hold bool
}

func TestLRUTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slots int
		steps []step
	}{
		{"two sessions take turns on two slots", 2, []step{
			{"A", -1, 0, false, false}, {"B", -1, 1, false, false},
			{"A", 0, 0, true, false}, {"B", 1, 1, true, false},
			{"A", 0, 0, true, false}, {"B", 1, 1, true, false},
		}},
		{"two sessions on one slot evict each other", 1, []step{
			{"A", -1, 0, false, false}, {"B", -1, 0, false, false},
			{"A", 0, 0, false, false}, {"B", 0, 0, false, false},
		}},
		{"more sessions than slots: the least recently used goes", 2, []step{
			{"A", -1, 0, false, false}, {"B", -1, 1, false, false},
			{"C", -1, 0, false, false}, // A's slot was used least recently
			{"B", 1, 1, true, false},   // B still owns 1
			{"A", 0, 0, false, false},  // A returns: 0 (C's) is now the LRU
			{"C", 0, 1, false, false},  // C lost 0 to A; 1 (B's) is LRU
			{"A", 0, 0, true, false},
		}},
		{"a session returning after eviction gets the LRU slot", 3, []step{
			{"A", -1, 0, false, false}, {"B", -1, 1, false, false}, {"C", -1, 2, false, false},
			{"D", -1, 0, false, false}, // evicts A
			{"B", 1, 1, true, false},
			{"A", 0, 2, false, false}, // C's slot is now the least recently used
			{"C", 2, 0, false, false}, // D's
			{"D", 0, 1, false, false}, // B's
			{"A", 2, 2, true, false},
		}},
		{"a busy slot is passed over", 2, []step{
			{"A", -1, 0, false, true}, // A still in flight
			{"B", -1, 1, false, false},
			{"C", -1, 1, false, false}, // 0 is busy although least recently used
		}},
		{"after a restart a hint takes back an unused slot", 2, []step{
			{"B", 1, 1, true, false}, // B's log says 1: nobody has used it yet
			{"A", 0, 0, true, false},
			{"C", 0, 1, false, false}, // 0 is A's now; 1 is LRU
			{"A", 0, 0, true, false},
		}},
		{"a hint to a slot used since the restart is no claim", 2, []step{
			{"N", -1, 0, false, false}, // a new session takes 0 first
			{"A", 0, 1, false, false},  // A's cache in 0 is gone
			{"B", 1, 0, false, false},  // 1 is A's now; B gets the LRU
		}},
		{"a hint out of range is ignored", 1, []step{
			{"A", 3, 0, false, false}, {"A", 3, 0, true, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.slots)
			for i, s := range tc.steps {
				l, err := p.Acquire(context.Background(), s.who, s.hint)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if l.Slot != s.slot || l.Kept != s.kept {
					t.Fatalf("step %d (%s): slot %d kept %v, want slot %d kept %v", i, s.who, l.Slot, l.Kept, s.slot, s.kept)
				}
				if !s.hold {
					l.Release()
				}
			}
		})
	}
}

func TestNewAtLeastOne(t *testing.T) {
	if n := New(0).Len(); n != 1 {
		t.Fatalf("New(0) has %d slots", n)
	}
}

// A request waits while every slot is busy; slots come free to the
// waiters in the order they came, and a waiter whose context ends leaves
// the queue without taking a slot.
func TestWaitersFirstComeFirstServed(t *testing.T) {
	p := New(1)
	hold, err := p.Acquire(context.Background(), "A", -1)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 3)
	ctxC, cancelC := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, who := range []string{"B", "C", "D"} {
		ctx := context.Background()
		if who == "C" {
			ctx = ctxC
		}
		wg.Go(func() {
			l, err := p.Acquire(ctx, who, -1)
			if err != nil {
				got <- who + ":" + err.Error()
				return
			}
			got <- who
			l.Release()
		})
		waitQueue(t, p, map[string]int{"B": 1, "C": 2, "D": 3}[who])
	}
	cancelC()
	if g := <-got; g != "C:context canceled" {
		t.Fatalf("cancelled waiter: %q", g)
	}
	waitQueue(t, p, 2)
	hold.Release()
	wg.Wait()
	close(got)
	var order []string
	for g := range got {
		order = append(order, g)
	}
	if strings.Join(order, ",") != "B,D" {
		t.Fatalf("served in order %v, want B then D", order)
	}
	// D used the slot last, so it is D's.
	l, _ := p.Acquire(context.Background(), "D", -1)
	if !l.Kept {
		t.Fatal("D does not own the slot it used last")
	}
	l.Release()
	l.Release() // a second release changes nothing
	if p.slots[0].busy {
		t.Fatal("slot still busy")
	}
}

func waitQueue(t *testing.T, p *Pool, n int) {
	t.Helper()
	for range 1000 {
		p.mu.Lock()
		q := len(p.queue)
		p.mu.Unlock()
		if q == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the queue never held %d waiters", n)
}

// oracle is a deliberately naive LRU: it keeps every acquire and release
// ever made and answers each question by scanning all of them.
type oracle struct {
	n      int
	events []event
	held   map[string]int // session -> slot it holds now
}

type event struct {
	slot    int
	owner   string
	acquire bool
}

func (o *oracle) busy(k int) bool {
	for _, s := range o.held {
		if s == k {
			return true
		}
	}
	return false
}

// lastUse is the index of slot k's last event, -1 if none.
func (o *oracle) lastUse(k int) int {
	last := -1
	for i, e := range o.events {
		if e.slot == k {
			last = i
		}
	}
	return last
}

func (o *oracle) owner(k int) string {
	who := ""
	for _, e := range o.events {
		if e.slot == k && e.acquire {
			who = e.owner
		}
	}
	return who
}

// acquire answers what the pool must give, or ok false when it must wait.
func (o *oracle) acquire(who string, hint int) (slot int, kept, ok bool) {
	for k := range o.n {
		if o.owner(k) == who {
			return k, true, !o.busy(k)
		}
	}
	if hint >= 0 && hint < o.n && o.lastUse(hint) < 0 {
		return hint, true, true
	}
	best := -1
	for k := range o.n {
		if !o.busy(k) && (best < 0 || o.lastUse(k) < o.lastUse(best)) {
			best = k
		}
	}
	return best, false, best >= 0
}

// The pool against the naive oracle over random sequences of requests
// that start and end in any order, with random hints: the same slot, the
// same kept, and a wait exactly when the oracle says every usable slot is
// busy (probed with a context that has already ended).
func TestPoolMatchesNaiveLRU(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 1 + r.IntN(4)
		sessions := 1 + r.IntN(6)
		p := New(n)
		o := &oracle{n: n, held: map[string]int{}}
		leases := map[string]*Lease{}
		for op := range 60 {
			who := fmt.Sprintf("s%d", r.IntN(sessions))
			if l, ok := leases[who]; ok {
				l.Release()
				delete(leases, who)
				o.events = append(o.events, event{slot: o.held[who], owner: who})
				delete(o.held, who)
				continue
			}
			hint := r.IntN(n+2) - 1
			slot, kept, ok := o.acquire(who, hint)
			l, err := p.Acquire(ended, who, hint)
			if !ok {
				if err == nil {
					t.Fatalf("seed %d op %d: %s got slot %d, want a wait", seed, op, who, l.Slot)
				}
				continue
			}
			if err != nil || int(l.Slot) != slot || l.Kept != kept {
				t.Fatalf("seed %d op %d: %s hint %d: got %v, want slot %d kept %v", seed, op, who, hint, describe(l, err), slot, kept)
			}
			leases[who] = l
			o.held[who] = slot
			o.events = append(o.events, event{slot: slot, owner: who, acquire: true})
		}
	}
}

func describe(l *Lease, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("slot %d kept %v", l.Slot, l.Kept)
}

// Under concurrent use no slot is ever held twice, and every request is
// served.
func TestPoolConcurrent(t *testing.T) {
	p := New(3)
	var inUse [3]atomic.Int32
	var wg sync.WaitGroup
	var served atomic.Int32
	for g := range 12 {
		wg.Go(func() {
			for i := range 200 {
				l, err := p.Acquire(context.Background(), fmt.Sprintf("s%d", g), (g+i)%4-1)
				if err != nil {
					t.Error(err)
					return
				}
				if inUse[l.Slot].Add(1) != 1 {
					t.Errorf("slot %d held twice", l.Slot)
				}
				inUse[l.Slot].Add(-1)
				l.Release()
				served.Add(1)
			}
		})
	}
	wg.Wait()
	if served.Load() != 12*200 {
		t.Fatalf("%d served", served.Load())
	}
}
