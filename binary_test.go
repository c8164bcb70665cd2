package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltBinaryDispatchesOnArgv0 builds the real executable and runs it
// through symlinks, the way systemd and the owner will: the role comes from
// the name the kernel passes as argv[0], not from anything the test sets.
func TestBuiltBinaryDispatchesOnArgv0(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "boxmaker")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bxctl")); err != nil {
		t.Fatal(err)
	}

	out := runBinary(t, 0, filepath.Join(dir, "bxctl"), "--help")
	for _, want := range append([]string{"Usage: bxctl <command>"}, roleHelp["bxctl"]...) {
		if !strings.Contains(out, want) {
			t.Errorf("bxctl --help lacks %q:\n%s", want, out)
		}
	}

	// links makes the others, pointing at the built file.
	runBinary(t, 0, bin, "links", dir)
	out = runBinary(t, 0, filepath.Join(dir, "brokerd"), "--help")
	if !strings.HasPrefix(out, "Usage: brokerd <command>") || !strings.Contains(out, "serve --config=PATH") {
		t.Errorf("brokerd --help shows something else:\n%s", out)
	}
	if strings.Contains(out, "grants check") {
		t.Errorf("brokerd --help shows bxctl's commands:\n%s", out)
	}
	// A usage error, whose answer stays the same as roles gain behaviour.
	out = runBinary(t, 2, filepath.Join(dir, "loopd"), "serve")
	if !strings.HasPrefix(out, "loopd: missing flags: --config=PATH") {
		t.Errorf("loopd serve without --config printed %q", out)
	}
}

// runBinary runs name with args, checks its exit status and returns its
// stdout, or its stderr when the status is not 0.
func runBinary(t *testing.T, wantCode int, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if code != wantCode {
		t.Fatalf("%s %q: exit %d, want %d\nstdout: %s\nstderr: %s", name, args, code, wantCode, stdout.String(), stderr.String())
	}
	if code != 0 {
		return stderr.String()
	}
	return stdout.String()
}
