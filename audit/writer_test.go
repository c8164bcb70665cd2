package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

func TestWriterSyncsEveryRecord(t *testing.T) {
	dir, h := logDir(t), newHookFS()
	w, _ := openT(t, dir, newClock(day0), Options{OpenFile: h.open})
	for i := range 5 {
		if seq := appendT(t, w, someEvent); seq != uint64(i) {
			t.Fatalf("seq %d, want %d", seq, i)
		}
		// Append returned: the record is synced.
		if got := h.count(h.synced, f1); got != i+1 {
			t.Fatalf("after record %d, %d lines synced", i, got)
		}
	}
	closeT(t, w)
	if h.count(h.writes, f1) != 5 || h.count(h.syncs, f1) != 5 {
		t.Fatalf("writes %v syncs %v", h.writes, h.syncs)
	}
	// Creating the file synced the directory, once.
	if got := h.count(h.syncs, filepath.Base(dir)); got != 1 {
		t.Fatalf("directory synced %d times", got)
	}
	verifyOK(t, dir)
}

// TestWriterGroupCommit: many callers at once share syncs, and each returns
// only once its own record is synced.
func TestWriterGroupCommit(t *testing.T) {
	dir, h := logDir(t), newHookFS()
	h.slowSync = func() { time.Sleep(2 * time.Millisecond) }
	w, _ := openT(t, dir, newClock(day0), Options{OpenFile: h.open})
	const callers, each = 32, 10
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for range callers {
		wg.Go(func() {
			for range each {
				seq, err := w.Append(someEvent)
				if err == nil && uint64(h.count(h.synced, f1)) <= seq {
					err = errors.New("Append returned before its record was synced")
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	closeT(t, w)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep := verifyOK(t, dir)
	syncs := h.count(h.syncs, f1)
	if rep.Records != callers*each || syncs >= callers*each/2 {
		t.Fatalf("%d records, %d syncs: no group commit", rep.Records, syncs)
	}
	t.Logf("%d records with %d syncs", rep.Records, syncs)
}

func TestWriterDayBoundary(t *testing.T) {
	dir, h := logDir(t), newHookFS()
	c := newClock(time.Date(2026, 9, 17, 23, 59, 59, 997e6, time.UTC))
	w, _ := openT(t, dir, c, Options{OpenFile: h.open})
	for range 4 { // 23:59:59.998, .999, then 00:00:00.000, .001
		appendT(t, w, someEvent)
	}
	closeT(t, w)
	a, b := readLines(t, filepath.Join(dir, f1)), readLines(t, filepath.Join(dir, f2))
	if len(a) != 3 || len(b) != 3 { // SplitAfter leaves an empty last element
		t.Fatalf("files have %d and %d lines", len(a)-1, len(b)-1)
	}
	var first wire.AuditRecord
	if err := wire.Unmarshal([]byte(strings.TrimSuffix(b[0], "\n")), &first); err != nil {
		t.Fatal(err)
	}
	if first.Seq != 2 || first.Prev != wire.Sha256([]byte(strings.TrimSuffix(a[1], "\n"))) {
		t.Fatalf("the new day's first record %+v does not continue the chain", first)
	}
	if rep := verifyOK(t, dir); rep.Records != 4 {
		t.Fatalf("%+v", rep)
	}
	if got := h.count(h.syncs, filepath.Base(dir)); got != 2 {
		t.Fatalf("directory synced %d times, want one per file", got)
	}
}

// TestWriterBatchAcrossMidnight: one batch whose records fall on two days is
// written to two files, each synced once.
func TestWriterBatchAcrossMidnight(t *testing.T) {
	dir, h := logDir(t), newHookFS()
	var w *Writer
	c := newClock(time.Date(2026, 9, 17, 23, 59, 59, 997e6, time.UTC))
	first := true
	now := func() time.Time {
		if first { // hold the first record until four more are queued
			first = false
			for w.queued() < 4 {
				time.Sleep(time.Millisecond)
			}
		}
		return c.Now()
	}
	w, _ = openT(t, dir, c, Options{OpenFile: h.open, Now: now})
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { appendT(t, w, someEvent) })
		time.Sleep(5 * time.Millisecond) // the first one first
	}
	wg.Wait()
	closeT(t, w)
	// Record 0 alone; then .999 on the old day and three on the new one.
	if h.count(h.syncs, f1) != 2 || h.count(h.syncs, f2) != 1 || h.count(h.writes, f2) != 1 {
		t.Fatalf("syncs %v writes %v", h.syncs, h.writes)
	}
	verifyOK(t, dir)
}

func (w *Writer) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

func TestWriterNeverGoesBackADay(t *testing.T) {
	dir := logDir(t)
	c := newClock(day0)
	w, _ := openT(t, dir, c, Options{})
	appendT(t, w, someEvent)
	c.Set(day0.Add(24 * time.Hour))
	appendT(t, w, someEvent)
	c.Set(day0) // the clock jumps back a day
	appendT(t, w, someEvent)
	closeT(t, w)
	if n := len(readLines(t, filepath.Join(dir, f2))) - 1; n != 2 {
		t.Fatalf("%s has %d lines, want 2", f2, n)
	}
	rep := verifyOK(t, dir)
	if len(rep.ClockWarnings) != 1 || rep.ClockWarnings[0] != (Location{f2, 2}) {
		t.Fatalf("%+v", rep.ClockWarnings)
	}
}

func TestWriterModes(t *testing.T) {
	dir := logDir(t)
	w, _ := openT(t, dir, newClock(day0), Options{})
	appendT(t, w, someEvent)
	closeT(t, w)
	for path, want := range map[string]os.FileMode{
		dir: os.ModeDir | 0o700, filepath.Join(dir, f1): 0o600, filepath.Join(dir, ".lock"): 0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode(), want)
		}
	}
}

func TestWriterRejectsBadEvents(t *testing.T) {
	dir := logDir(t)
	w, _ := openT(t, dir, newClock(day0), Options{})
	defer closeT(t, w)
	if _, err := w.Append(nil); err == nil {
		t.Fatal("nil event accepted")
	}
	if _, err := w.Append(wire.DecisionEvent{}); err == nil {
		t.Fatal("zero DecisionEvent accepted")
	}
	// Neither consumed a seq, and the writer still works.
	if seq := appendT(t, w, someEvent); seq != 0 {
		t.Fatalf("seq %d", seq)
	}
}

func TestWriterClosed(t *testing.T) {
	dir := logDir(t)
	w, _ := openT(t, dir, newClock(day0), Options{})
	appendT(t, w, someEvent)
	closeT(t, w)
	if _, err := w.Append(someEvent); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestWriterCloseCommitsQueued: callers waiting when Close is called get
// their records written, not dropped.
func TestWriterCloseCommitsQueued(t *testing.T) {
	dir, h := logDir(t), newHookFS()
	h.slowSync = func() { time.Sleep(5 * time.Millisecond) }
	w, _ := openT(t, dir, newClock(day0), Options{OpenFile: h.open})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Go(func() {
			if _, err := w.Append(someEvent); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !errors.Is(err, ErrClosed) {
				t.Error(err)
			}
		})
	}
	time.Sleep(2 * time.Millisecond)
	closeT(t, w)
	wg.Wait()
	if rep := verifyOK(t, dir); rep.Records != uint64(ok) {
		t.Fatalf("%d records, %d callers told theirs was written", rep.Records, ok)
	}
}
