package jobs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/jobs/jobstest"
)

// goodState runs one job once and returns the state file it left.
func goodState(t *testing.T, path string) []byte {
	t.Helper()
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, path, job(t, "catch", "15m", true))
	h.run()
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStart(t0.Add(8*time.Minute), jobs.Scheduled, "catch")
	h.end(nil)
	h.stop()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return good
}

// TestStateFileKinds: jobs.json is read like every state file (issue 29,
// class 1): not through a symbolic link, and only if it is a regular file.
// A FIFO must not stall brokerd's start; a dangling link is not a fresh
// start; a link to a valid file elsewhere is not read as this one. Each is
// damage: logged, kept aside as it was, and no catch-up this start.
func TestStateFileKinds(t *testing.T) {
	for _, kind := range []struct {
		name string
		make func(t *testing.T, path string, good []byte)
	}{
		{"dangling link", func(t *testing.T, path string, _ []byte) {
			mustSymlink(t, filepath.Join(t.TempDir(), "gone.json"), path)
		}},
		{"link to a valid file", func(t *testing.T, path string, good []byte) {
			elsewhere := filepath.Join(t.TempDir(), "jobs.json")
			if err := os.WriteFile(elsewhere, good, 0o600); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, elsewhere, path)
		}},
		{"fifo", func(t *testing.T, path string, _ []byte) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", func(t *testing.T, path string, _ []byte) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			path := statePath(t)
			good := goodState(t, path)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			kind.make(t, path, good)
			before := describe(t, path)
			made := make(chan *harness, 1)
			clock := jobstest.NewClock(time.Date(2026, 3, 2, 12, 20, 0, 0, time.UTC))
			go func() { made <- newHarness(t, clock, path, job(t, "catch", "15m", true)) }()
			var h *harness
			select {
			case h = <-made:
			case <-time.After(5 * time.Second):
				t.Fatal("New did not return: reading the state file blocked")
			}
			if !h.logged("see docs/runbook.md#jobs-state-damaged") || !h.loggedLine("jobs: the damaged file is kept as "+path+".damaged") {
				t.Fatalf("log %q", h.logs)
			}
			if kept := describe(t, path+".damaged"); kept != before {
				t.Fatalf("kept %s, was %s", kept, before)
			}
			// Fail closed: no catch-up of the 10:15 run's successors.
			h.run()
			h.wantNoStart()
			h.stop()
			if _, err := jobs.ReadStateChecked(path); err != nil {
				t.Fatalf("the state file after: %v", err)
			}
		})
	}
}

// TestDamagedCopiesAreKept: a second damaged file does not overwrite the
// first one kept aside; each is kept under its own name.
func TestDamagedCopiesAreKept(t *testing.T) {
	path := statePath(t)
	for i, damage := range []string{"{", "[]", "null"} {
		if err := os.WriteFile(path, []byte(damage), 0o600); err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, jobstest.NewClock(t0), path, job(t, "catch", "15m", true))
		aside := path + ".damaged"
		if i > 0 {
			aside += "." + string(rune('0'+i))
		}
		if !h.loggedLine("jobs: the damaged file is kept as " + aside) {
			t.Fatalf("damage %d: log %q", i, h.logs)
		}
		h.run()
		h.stop()
	}
	for i, damage := range []string{"{", "[]", "null"} {
		aside := path + ".damaged"
		if i > 0 {
			aside += "." + string(rune('0'+i))
		}
		if got, err := os.ReadFile(aside); err != nil || string(got) != damage {
			t.Errorf("%s: %q, %v; want %q", aside, got, err, damage)
		}
	}
}

func mustSymlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// describe is what is at path: a link's target, a file's bytes, or its type.
func describe(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return "link to " + target
	case fi.Mode().IsRegular():
		b, _ := os.ReadFile(path)
		return "file " + string(b)
	}
	return "a " + fi.Mode().Type().String()
}

// TestStateUnreadableStopsTheStart: a state file that is there but cannot
// be read for another reason (EIO, EACCES, EMFILE) is not damage: moving
// it aside or writing over it would lose what ran, and starting without it
// could run a job twice. New refuses, saying why, and leaves it as it is.
func TestStateUnreadableStopsTheStart(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.EACCES, syscall.EMFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			path := statePath(t)
			good := goodState(t, path)
			defer jobs.SetStateReadError(errno)()
			_, err := jobs.New(nil, path, jobstest.NewClock(t0), jobs.Hooks{Start: noStart})
			want := "jobs: the state file " + path + " cannot be read: "
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, errno) ||
				!strings.HasSuffix(err.Error(), "see docs/runbook.md#jobs-state-unreadable") {
				t.Fatalf("New: %v; want %q…", err, want)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, good) {
				t.Fatalf("the state file was changed: %q, %v", got, err)
			}
			if _, err := os.Lstat(path + ".damaged"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("something was set aside: %v", err)
			}
		})
	}
}

func noStart(context.Context, jobs.Run) error { return nil }

// loggedLine reports whether line was logged, whole.
func (h *harness) loggedLine(line string) bool {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return slices.Contains(h.logs, line)
}
