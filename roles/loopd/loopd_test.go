package loopd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed self-test exits 1 and says why, each problem with its runbook
// entry, then the self-test's own.
func TestServeSelftestFails(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "loopd.toml")
	text := "[paths]\nhome = \"" + dir + "\"\n[model]\nsocket = \"" + filepath.Join(dir, "infer.sock") +
		"\"\n[listen]\nsocket = \"" + filepath.Join(dir, "loop.sock") + "\"\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main("loopd", []string{"serve", "--config", cfg}, nil, &stdout, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code != 1 || len(lines) != 3 ||
		!strings.HasPrefix(lines[0], "loopd: self-test: memory/core.md is unreadable") ||
		!strings.HasSuffix(lines[0], "see docs/runbook.md#core-memory-unreadable") ||
		!strings.HasPrefix(lines[1], "loopd: self-test: the model does not answer /health") ||
		lines[2] != "loopd: self-test failed; see docs/runbook.md#loopd-selftest-failed" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

func TestServeBadConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "loopd.toml")
	os.WriteFile(cfg, []byte("[paths]\nHome = \"/x\"\n"), 0o600)
	var stdout, stderr bytes.Buffer
	if code := Main("loopd", []string{"serve", "--config", cfg}, nil, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), cfg+`:2: unknown key "paths.Home"`) ||
		!strings.HasSuffix(stderr.String(), "\nsee docs/runbook.md#loopd-config-invalid\n") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// A gateway socket that cannot be bound is refused at start, with the
// file and line, before anything listens.
func TestServeBadGatewayPath(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "loopd.toml")
	text := "[paths]\nhome = \"" + dir + "\"\n[model]\nsocket = \"" + filepath.Join(dir, "infer.sock") +
		"\"\n[listen]\nsocket = \"" + filepath.Join(dir, "loop.sock") + "\"\ngateway = \"run/gateway-loop/loop.sock\"\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main("loopd", []string{"serve", "--config", cfg}, nil, &stdout, &stderr); code != 1 ||
		stderr.String() != "loopd: "+cfg+`:7: [listen] gateway must be an absolute path, not "run/gateway-loop/loop.sock"`+
			"\nsee docs/runbook.md#loopd-config-invalid\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Lstat(filepath.Join(dir, "loop.sock")); !os.IsNotExist(err) {
		t.Fatalf("loop.sock: %v", err)
	}
}

// A retired [model] slot names its own runbook entry, and only that one.
func TestServeRetiredSlotNamesOneEntry(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "loopd.toml")
	text := "[paths]\nhome = \"" + dir + "\"\n[model]\nsocket = \"" + filepath.Join(dir, "infer.sock") +
		"\"\nslot = 0\n[listen]\nsocket = \"" + filepath.Join(dir, "loop.sock") + "\"\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main("loopd", []string{"serve", "--config", cfg}, nil, &stdout, &stderr)
	if code != 1 || strings.Count(stderr.String(), "runbook.md") != 1 ||
		!strings.HasSuffix(stderr.String(), "see docs/runbook.md#loopd-slot-retired\n") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
