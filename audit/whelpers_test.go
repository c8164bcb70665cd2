package audit

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// openT opens dir with a test clock and fails the test on error.
func openT(t testing.TB, dir string, c *clock, opts Options) (*Writer, StartupReport) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = c.Now
	}
	w, rep, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return w, rep
}

func appendT(t testing.TB, w *Writer, ev wire.AuditEvent) uint64 {
	t.Helper()
	seq, err := w.Append(ev)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return seq
}

func closeT(t testing.TB, w *Writer) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// readLines returns the lines of one log file.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func logDir(t testing.TB) string {
	return filepath.Join(t.TempDir(), "audit")
}

// clock is a settable test clock that ticks a millisecond per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// verifyOK verifies dir and fails the test unless the chain is intact.
func verifyOK(t testing.TB, dir string) ChainReport {
	t.Helper()
	rep, err := VerifyDir(dir)
	if err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
	if rep.Failure != nil {
		t.Fatalf("VerifyDir: %s", rep.Failure)
	}
	if rep.slow != 0 {
		t.Fatalf("VerifyDir: %d lines took the slow path", rep.slow)
	}
	return rep
}
