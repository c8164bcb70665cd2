// Package runnertest has a recording Runtime for tests of the broker.
package runnertest

import (
	"context"
	"sync"

	"boxmaker/roles/brokerd/internal/runner"
)

// Recording records every spec it is given and answers with Output, or with
// Err when set. It refuses a spec that runner.Run did not build.
type Recording struct {
	mu     sync.Mutex
	specs  []*runner.RunSpec
	Output runner.Output
	Err    error
}

func (r *Recording) Run(_ context.Context, spec *runner.RunSpec) (runner.Output, error) {
	if !spec.Valid() {
		return runner.Output{}, runner.Unavailable("not a spec built by the runner")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.specs = append(r.specs, spec)
	return r.Output, r.Err
}

// Specs are the specs run so far, in order.
func (r *Recording) Specs() []*runner.RunSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runner.RunSpec(nil), r.specs...)
}

// Count is how many runs happened.
func (r *Recording) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.specs)
}
