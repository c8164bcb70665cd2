// Package jobstest holds a fake clock for tests of the job scheduler and of
// brokerd around it (issue 17: "a scheduled run happens on time (a fake
// clock)"). No production package imports it.
package jobstest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs"
)

// Clock is a jobs.Clock whose time moves only by Advance or To, which fire
// the timers due by then, in order of their deadlines, before returning.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	pending []*timer
	made    int
}

type timer struct {
	c    *Clock
	at   time.Time
	ch   chan time.Time
	done bool
}

var _ jobs.Clock = (*Clock)(nil)

// NewClock is a clock reading now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer makes a timer that fires when the clock reaches now+d; at once
// if d <= 0.
func (c *Clock) NewTimer(d time.Duration) jobs.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made++
	t := &timer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.done = true
		t.ch <- c.now
		return t
	}
	c.pending = append(c.pending, t)
	return t
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.c.pending = slices.DeleteFunc(t.c.pending, func(p *timer) bool { return p == t })
	return true
}

// Advance moves the time by d and fires every timer due by then. It does
// not wait for whoever receives from the timers.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	slices.SortStableFunc(c.pending, func(a, b *timer) int { return a.at.Compare(b.at) })
	for len(c.pending) > 0 && !c.pending[0].at.After(c.now) {
		t := c.pending[0]
		c.pending = c.pending[1:]
		t.done = true
		t.ch <- c.now
	}
}

// State is the number of timers made so far and of those pending.
func (c *Clock) State() (made, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made, len(c.pending)
}

// WaitIdle waits (up to 5 seconds, then fails the test) until a timer
// newer than the made-th is pending: the scheduler has done what the last
// step asked of it and is waiting again.
func (c *Clock) WaitIdle(t testing.TB, made int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, p := c.State()
		if m > made && p > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobstest: no new timer was set (made %d, pending %d)", m, p)
		}
		time.Sleep(time.Millisecond)
	}
}

// To moves the time to at, stopping at each timer's deadline on the way
// and waiting there until the scheduler has set its next timer, as real
// time would let it. A scheduler must be waiting on a timer.
func (c *Clock) To(t testing.TB, at time.Time) {
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
			t.Fatal("jobstest: no timer pending: the scheduler is not waiting")
		}
		if next.After(at) {
			c.Advance(at.Sub(now))
			return
		}
		c.Advance(next.Sub(now))
		c.WaitIdle(t, made)
	}
}
