package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestCIRunsTheReadmeGateCommand keeps the README's promise honest: CI runs
// the very command the README gives for the gate.
func TestCIRunsTheReadmeGateCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```sh\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("README.md has no ```sh code block")
	}
	cmds := strings.Split(strings.TrimSpace(block), "\n")
	if len(cmds) != 2 || !strings.HasSuffix(cmds[1], " gate") {
		t.Fatalf("README.md's first code block should be two commands, the second the gate: %q", cmds)
	}
	if !slices.Contains(strings.Split(string(ci), "\n"), cmds[1]) {
		t.Errorf(".ci/run does not run the README's gate command %q", cmds[1])
	}
}
