package audit

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestLockRefusesSecondWriter(t *testing.T) {
	dir := logDir(t)
	c := newClock(day0)
	w, _ := openT(t, dir, c, Options{})
	_, _, err := Open(dir, Options{Now: c.Now})
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Open: %v", err)
	}
	if want := "brokerd is already running\nsee docs/runbook.md#brokerd-already-running"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	closeT(t, w)
	w, _ = openT(t, dir, c, Options{}) // free again once closed
	closeT(t, w)
}

// TestLockAcrossProcesses: a writer in another process holds the lock
// against this one, and this one's against it.
func TestLockAcrossProcesses(t *testing.T) {
	dir := logDir(t)
	holder := func() (*exec.Cmd, func()) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelper$")
		cmd.Env = append(os.Environ(), "AUDIT_LOCK_HELPER="+dir)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		return cmd, func() {
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("helper: %v", err)
			}
			if line != "locked\n" {
				t.Fatalf("helper said %q", line)
			}
		}
	}
	// Another process holds it.
	_, done := holder()
	if _, _, err := Open(dir, Options{}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Open while another process holds the lock: %v", err)
	}
	done()
	// This process holds it.
	w, _ := openT(t, dir, newClock(day0), Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelper$")
	cmd.Env = append(os.Environ(), "AUDIT_LOCK_HELPER="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused: brokerd is already running") {
		t.Fatalf("helper while this process holds the lock: %v\n%s", err, out)
	}
	closeT(t, w)
}

// TestLockHelper is the other process: it opens the log and holds it until
// its stdin closes, or says it was refused.
func TestLockHelper(t *testing.T) {
	dir := os.Getenv("AUDIT_LOCK_HELPER")
	if dir == "" {
		t.Skip("only run by TestLockAcrossProcesses")
	}
	w, _, err := Open(dir, Options{})
	if err != nil {
		os.Stdout.WriteString("refused: " + err.Error() + "\n")
		return
	}
	os.Stdout.WriteString("locked\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
