// Package slots shares the model server's slots among loopd's sessions.
//
// llama-server keeps one prompt cache per slot (`-np N` gives N slots,
// each with n_ctx/N tokens of context). A request names its slot
// (id_slot); the slot then holds that request's prompt and answer, and the
// next request on the slot reuses their longest common prefix. A slot
// serves one request at a time, and different slots are served at once.
//
// A session keeps its slot for as long as it is the slot's most recent
// user, so its next request finds its whole history cached. A session
// without one (new, or its slot was since used by another session) gets
// the least recently used of the free slots, and its history is computed
// again there: an expected miss, not a loss. A request waits only when
// every slot is busy, and then for the first slot to come free, first come
// first served.
//
// The pool lives in memory only: a restarted loopd maps its sessions onto
// the slots again. A session's hint, the slot its log says it used last,
// lets it take that slot back as long as no session has used the slot
// since the restart (docs/decisions.md, "loopd: sessions share the
// server's slots").
package slots

import (
	"context"
	"sync"
)

// Pool is the slots of one model server. It is safe for concurrent use.
type Pool struct {
	mu    sync.Mutex
	slots []slot
	clock uint64
	queue []*waiter
}

// slot is what the pool knows of one server slot.
type slot struct {
	owner string // the session that used it last; "" none since the pool began
	used  uint64 // the pool's clock at its last acquire or release: LRU order
	busy  bool
}

// waiter is a request waiting for any slot to come free.
type waiter struct {
	owner string
	got   chan *Lease // buffered: a release hands over without blocking
}

// Lease is one request's hold on a slot, from Acquire to Release.
type Lease struct {
	// Slot is the id_slot the request must name.
	Slot uint32
	// Kept says the slot should still hold what this session last left in
	// it: the session was the slot's most recent user (or, after a
	// restart, claimed the slot its log names before anyone else used
	// it). When false, the slot holds another session's tokens or none.
	Kept bool

	p    *Pool
	once sync.Once
}

// New returns a pool of n slots, id_slot 0 to n-1; n below 1 is 1.
func New(n int) *Pool {
	return &Pool{slots: make([]slot, max(n, 1))}
}

// Len is the number of slots.
func (p *Pool) Len() int { return len(p.slots) }

// Acquire holds a slot for one request of owner (a session's name) until
// the lease is released. hint is the slot the session's log says it used
// last, or -1: a slot nobody has used since the pool began is given back
// to the session that names it, since the server's cache there is
// probably still the session's. Acquire waits while every slot is busy; it
// returns ctx's error if ctx ends first.
func (p *Pool) Acquire(ctx context.Context, owner string, hint int) (*Lease, error) {
	p.mu.Lock()
	if i, kept, ok := p.pick(owner, hint); ok {
		l := p.take(i, owner, kept)
		p.mu.Unlock()
		return l, nil
	}
	w := &waiter{owner: owner, got: make(chan *Lease, 1)}
	p.queue = append(p.queue, w)
	p.mu.Unlock()
	select {
	case l := <-w.got:
		return l, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	for i, q := range p.queue {
		if q == w {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			p.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	p.mu.Unlock()
	// A release handed over a slot just as ctx ended: give it on.
	(<-w.got).Release()
	return nil, ctx.Err()
}

// Peek is the slot Acquire would give owner now, without a hint, taking
// nothing: the slot it owns, else the least recently used free slot, else
// the least recently used of all. A new epoch records it in SessionStart.
func (p *Pool) Peek(owner string) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i, _, ok := p.pick(owner, -1); ok {
		return uint32(i)
	}
	best := 0
	for i := range p.slots {
		if p.slots[i].used < p.slots[best].used {
			best = i
		}
	}
	return uint32(best)
}

// Release gives the slot back; its session stays the slot's owner until
// another session takes the slot. A second Release does nothing.
func (l *Lease) Release() {
	l.once.Do(func() { l.p.release(int(l.Slot)) })
}

// pick chooses owner's slot among the free ones: the slot it owns, then
// its hint if nobody has used that slot yet, then the least recently used
// (the lowest-numbered of equals). ok is false when none is free.
func (p *Pool) pick(owner string, hint int) (i int, kept, ok bool) {
	for i := range p.slots {
		if p.slots[i].owner == owner {
			// An owner is never busy elsewhere: a session sends one
			// request at a time, and whoever else takes the slot becomes
			// its owner. If it is busy all the same, wait like the rest.
			return i, true, !p.slots[i].busy
		}
	}
	if hint >= 0 && hint < len(p.slots) && p.slots[hint].owner == "" && !p.slots[hint].busy {
		return hint, true, true
	}
	best := -1
	for i := range p.slots {
		if !p.slots[i].busy && (best < 0 || p.slots[i].used < p.slots[best].used) {
			best = i
		}
	}
	return best, false, best >= 0
}

// take marks slot i busy for owner. p.mu is held.
func (p *Pool) take(i int, owner string, kept bool) *Lease {
	p.clock++
	p.slots[i] = slot{owner: owner, used: p.clock, busy: true}
	return &Lease{Slot: uint32(i), Kept: kept, p: p}
}

// release frees slot i, or hands it to the first waiter.
func (p *Pool) release(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock++
	p.slots[i].busy = false
	p.slots[i].used = p.clock
	if len(p.queue) == 0 {
		return
	}
	w := p.queue[0]
	p.queue = p.queue[1:]
	w.got <- p.take(i, w.owner, p.slots[i].owner == w.owner)
}
