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

// TestDemoLlama runs the demo as just demo --model llama does: the same
// chat against llama.cpp's own llama-server, each message answered by a
// scripted tiny model that calls its tool, reads the result and replies.
// It fails without llama-server (just llama-setup) or Podman.
func TestDemoLlama(t *testing.T) {
	bin := build(t)
	demo := filepath.Join(t.TempDir(), "demo")
	for _, args := range [][]string{{"-o", demo, "./cmd/demo"}, {"-o", filepath.Join(bin, "tinymodel"), "../tinymodel/cmd/tinymodel"}} {
		if out, err := exec.Command("go", append([]string{"build"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, demo, "-bin", bin, "--model", "llama").CombinedOutput()
	if err != nil {
		t.Fatalf("the demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"NOT real models",
		"== Model 1 of 3, scripted to call read_file:",
		"approved 0: runs\ntool call 1 ended: result, private\n│ Done - your notes were read in a container, after your approval!\n",
		"tool call 1 ended: result, private\n│ Your scratch folder, listed in a container!\n",
		"tool call 1 ended: denied (no_grant)\n│ That fetch was denied; no grant allows it!\n",
		"\naudit: ok, 6 records,",
		"== Stopped: no process and no container left behind",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "== bxctl ") {
		t.Errorf("a bxctl command failed:\n%s", out)
	}
}
