package harness_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the README's main job, the demo command, as just demo does
// (its script, no terminal) and holds it to what it promises: the three
// tool calls end as the script says, audit verify passes on the log the
// run wrote, and nothing is left behind. It once exited 1 at audit verify
// while every other test passed.
func TestDemo(t *testing.T) {
	bin := build(t)
	demo := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", demo, "./cmd/demo").CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, demo, "-bin", bin)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"tool call 1 ended: result, private",
		"tool call 2 ended: result, private",
		"tool call 3 ended: denied (no_grant)",
		"\naudit: ok, ",
		"== Stopped: no process and no container left behind",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "== bxctl audit verify: ") {
		t.Errorf("audit verify did not pass:\n%s", out)
	}
}
