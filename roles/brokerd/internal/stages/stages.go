// Package stages times the stages of one tool call, for the benchmarks of
// issue 26: brokerd's code marks the end of each stage on the call's
// context, and a test that put a Clock there reads the marks back. Without
// a Clock, Mark does nothing and costs one context lookup.
package stages

import (
	"context"
	"sync"
	"time"
)

// Clock holds one call's marks, from its start.
type Clock struct {
	start time.Time
	mu    sync.Mutex
	last  time.Time // the latest mark, or start
	marks []Span
}

// Span is one stage: its name and how long it took, from the mark before
// it (or the clock's start).
type Span struct {
	Stage string
	Took  time.Duration
}

// Start starts a clock now.
func Start() *Clock {
	now := time.Now()
	return &Clock{start: now, last: now}
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *Clock) context.Context { return context.WithValue(ctx, key{}, c) }

// Mark ends the stage named stage on ctx's clock, if it has one.
func Mark(ctx context.Context, stage string) {
	c, _ := ctx.Value(key{}).(*Clock)
	if c == nil {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marks = append(c.marks, Span{Stage: stage, Took: now.Sub(c.last)})
	c.last = now
}

// Spans are the stages marked so far, in order.
func (c *Clock) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.marks...)
}
