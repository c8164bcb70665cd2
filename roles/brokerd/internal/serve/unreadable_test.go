package serve

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/wire"
)

// TestDecisionRefusesUnreadableState (issue 29, class 1): every kind of
// name at a session's state file that is not the file brokerd writes
// denies the call (state_unreadable), recorded as the strictest state. A
// dangling link used to read as "no file": private and trusted, so a
// session brokerd had marked secret could fetch.
func TestDecisionRefusesUnreadableState(t *testing.T) {
	kinds := map[string]func(t *testing.T, path string){
		"dangling link": func(t *testing.T, path string) {
			if err := os.Symlink(path+".gone", path); err != nil {
				t.Fatal(err)
			}
		},
		"link to a private state": func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "x.json")
			if err := os.WriteFile(target, []byte(`{"taint":"private","untrusted":false}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		},
		"directory": func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, plant := range kinds {
		t.Run(name, func(t *testing.T) {
			h := start(t, map[string]string{"a.toml": grantAuto})
			plant(t, filepath.Join(h.cfg.Paths.Home, "broker", "sessions", "s-bad.json"))
			if got := h.call(readReq(t, "s-bad", 1, "/data/auto/x")); got != (wire.DeniedResponse{Reason: wire.StateUnreadable}) {
				t.Fatalf("got %+v, want state_unreadable", got)
			}
			if out := h.stderr.String(); !strings.Contains(out, "see docs/runbook.md#broker-state-damaged\n") {
				t.Fatalf("stderr %q", out)
			}
			if d := h.events()[0].(wire.DecisionEvent); d.Taint != wire.Secret || !d.Untrusted {
				t.Fatalf("decision %+v", d)
			}
			if h.rt.Count() != 0 {
				t.Fatal("the call ran")
			}
		})
	}
}
