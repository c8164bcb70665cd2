package jobs

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock whose time moves only by Advance, which fires the
// timers due by then, in order of their deadlines, before it returns.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	pending []*fakeTimer
	made    int // timers made so far, to wait for a new one
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	ch   chan time.Time
	done bool
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made++
	t := &fakeTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.done = true
		t.ch <- c.now
		return t
	}
	c.pending = append(c.pending, t)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.c.pending = slices.DeleteFunc(t.c.pending, func(p *fakeTimer) bool { return p == t })
	return true
}

// Advance moves the time by d and fires every timer due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	slices.SortStableFunc(c.pending, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for len(c.pending) > 0 && !c.pending[0].at.After(c.now) {
		t := c.pending[0]
		c.pending = c.pending[1:]
		t.done = true
		t.ch <- c.now
	}
}

// state is the number of timers made and pending.
func (c *fakeClock) state() (made, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made, len(c.pending)
}

// waitIdle waits until a timer newer than the made-th is pending: the
// scheduler has done what the last step asked and is waiting again.
func (c *fakeClock) waitIdle(t *testing.T, made int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, p := c.state()
		if m > made && p > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler did not set a new timer (made %d, pending %d)", m, p)
		}
		time.Sleep(time.Millisecond)
	}
}

// to moves the time to at, stopping at each timer's deadline on the way
// and waiting there until the scheduler has set its next timer, as real
// time would let it.
func (c *fakeClock) to(t *testing.T, at time.Time) {
	t.Helper()
	for {
		c.mu.Lock()
		made, now := c.made, c.now
		var next time.Time
		for _, p := range c.pending {
			if next.IsZero() || p.at.Before(next) {
				next = p.at
			}
		}
		c.mu.Unlock()
		if next.IsZero() {
			t.Fatal("no timer pending: the scheduler is not waiting")
		}
		if next.After(at) {
			c.Advance(at.Sub(now))
			return
		}
		c.Advance(next.Sub(now))
		c.waitIdle(t, made)
	}
}
