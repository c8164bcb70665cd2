package serve

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
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

// TestExecutableProtected: no grant may reach the running executable or
// the folder of its role links.
func TestExecutableProtected(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	h := start(t, map[string]string{"bin.toml": "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"" + filepath.Dir(exe) + "\"]\n"})
	got := h.call(wire.ToolRequest{Session: sid(t, "s-1"), Call: 1, Tool: "shell", Arguments: `{"command":"true","cwd":null}`})
	if got != (wire.DeniedResponse{Reason: wire.GrantsInvalid}) {
		t.Fatalf("a grant over %s: %#v", filepath.Dir(exe), got)
	}
}
