package serve

import (
	"path/filepath"
	"slices"
	"testing"

	"boxmaker/roles/brokerd/internal/runner"
)

// protectingRuntime records the paths serve asks it to refuse at every
// mount.
type protectingRuntime struct {
	hookedRuntime
	got *[]string
}

func (r protectingRuntime) Protect(paths []string) { *r.got = slices.Clone(paths) }

var _ runner.Runtime = protectingRuntime{}

// TestRuntimeGetsTheProtectedPaths: the set the grant loader refuses is the
// set the runtime checks at every mount (on the objects it holds), so an
// alias the loader cannot see is still refused.
func TestRuntimeGetsTheProtectedPaths(t *testing.T) {
	var got []string
	h := start(t, nil, func(o *Options) {
		o.Runtime = protectingRuntime{hookedRuntime: o.Runtime.(hookedRuntime), got: &got}
	})
	want := []string{h.cfg.Paths.Home, filepath.Join(h.cfg.Paths.Home, "broker"), h.cfg.Paths.Grants,
		h.cfg.Paths.Secrets, filepath.Dir(h.cfg.Sockets.Broker), filepath.Dir(h.cfg.Sockets.Admin)}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s is not protected at run time: %q", w, got)
		}
	}
	for _, p := range h.cfg.Protected() {
		if !slices.Contains(got, p.Path) {
			t.Errorf("the loader protects %s (%s) but the runtime does not", p.Path, p.What)
		}
	}
}
