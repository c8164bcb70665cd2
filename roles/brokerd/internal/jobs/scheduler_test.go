package jobs_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/jobs/jobstest"
	"boxmaker/wire"
)

// t0 is a Monday morning, in UTC, where the tests' cron lines are read.
var t0 = time.Date(2026, 3, 2, 10, 7, 0, 0, time.UTC)

func job(t *testing.T, name, schedule string, catchUp bool) jobs.Job {
	t.Helper()
	var s jobs.Schedule
	if d, err := time.ParseDuration(schedule); err == nil {
		s = jobs.Every(d)
	} else if s, err = jobs.ParseCronIn(schedule, time.UTC); err != nil {
		t.Fatal(err)
	}
	return jobs.Job{Name: name, Schedule: s, Prompt: "do " + name, Result: jobs.ResultPost, CatchUp: catchUp,
		Sha256: wire.Sha256([]byte(name + schedule))}
}

// harness runs a jobs.Scheduler on a fake clock. Start reports each run on
// starts and returns when the test sends the run's error on finish (or its
// ctx ends).
type harness struct {
	t       *testing.T
	clock   *jobstest.Clock
	path    string
	s       *jobs.Scheduler
	starts  chan jobs.Run
	skipped chan jobs.Run
	finish  chan error
	returns chan error // what Start returned, after it returned

	logMu sync.Mutex
	logs  []string

	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, clock *jobstest.Clock, path string, js ...jobs.Job) *harness {
	t.Helper()
	h := &harness{t: t, clock: clock, path: path, starts: make(chan jobs.Run, 16), skipped: make(chan jobs.Run, 16),
		finish: make(chan error), returns: make(chan error, 16)}
	s, err := jobs.New(js, path, clock, jobs.Hooks{
		Start: func(ctx context.Context, r jobs.Run) error {
			h.starts <- r
			var err error
			select {
			case err = <-h.finish:
			case <-ctx.Done():
				err = ctx.Err()
			}
			h.returns <- err
			return err
		},
		Skipped: func(r jobs.Run) { h.skipped <- r },
		Log: func(lines ...string) {
			h.logMu.Lock()
			defer h.logMu.Unlock()
			h.logs = append(h.logs, lines...)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	return h
}

// run starts Run and waits until it waits for its first timer.
func (h *harness) run() {
	made, _ := h.clock.State()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.s.Run(ctx) }()
	h.clock.WaitIdle(h.t, made)
	h.t.Cleanup(func() { h.stop() })
}

// stop cancels Run and waits for it to return.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		h.t.Fatal("Run did not return")
	}
}

func (h *harness) wantStart(due time.Time, tr jobs.Trigger, name string) jobs.Run {
	h.t.Helper()
	select {
	case r := <-h.starts:
		if !r.Due.Equal(due) || r.Trigger != tr || r.Job.Name != name {
			h.t.Fatalf("started %s %s due %s, want %s %s due %s", r.Job.Name, r.Trigger, r.Due, name, tr, due)
		}
		return r
	case <-time.After(5 * time.Second):
		h.t.Fatalf("no run of %s (%s, due %s) started", name, tr, due)
	}
	return jobs.Run{}
}

// wantStarts waits for runs of names, all due at due, in any order: each
// run's Start is called in its own goroutine.
func (h *harness) wantStarts(due time.Time, tr jobs.Trigger, names ...string) {
	h.t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for range names {
		select {
		case r := <-h.starts:
			if !r.Due.Equal(due) || r.Trigger != tr || !want[r.Job.Name] {
				h.t.Fatalf("started %s %s due %s, want one of %v %s due %s", r.Job.Name, r.Trigger, r.Due, names, tr, due)
			}
			delete(want, r.Job.Name)
		case <-time.After(5 * time.Second):
			h.t.Fatalf("runs %v (%s, due %s) did not start", want, tr, due)
		}
	}
}

func (h *harness) wantNoStart() {
	h.t.Helper()
	select {
	case r := <-h.starts:
		h.t.Fatalf("unexpected run %s %s due %s", r.Job.Name, r.Trigger, r.Due)
	default:
	}
}

// end ends one run going with err, and waits until its end is recorded
// and saved (the "run ended" line is logged after the state is written).
func (h *harness) end(err error) {
	h.t.Helper()
	before := h.count(": run ended: ")
	h.finish <- err
	<-h.returns
	deadline := time.Now().Add(5 * time.Second)
	for h.count(": run ended: ") == before {
		if time.Now().After(deadline) {
			h.t.Fatal("the run's end was not recorded")
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) count(sub string) int {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	n := 0
	for _, l := range h.logs {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

func (h *harness) logged(sub string) bool {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	for _, l := range h.logs {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func statePath(t *testing.T) string { return filepath.Join(t.TempDir(), "jobs.json") }

func TestSchedulerOnTime(t *testing.T) {
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, statePath(t), job(t, "quarter", "15m", false), job(t, "daily", "0 11 * * *", false))
	h.run()
	if st := h.s.Status(); len(st) != 2 || st[0].Name != "daily" || !st[0].Next.Equal(t0.Add(53*time.Minute)) ||
		st[1].Name != "quarter" || !st[1].Next.Equal(t0.Add(8*time.Minute)) || st[0].Last != nil {
		t.Fatalf("status %+v", st)
	}
	clock.To(t, t0.Add(8*time.Minute-time.Second))
	h.wantNoStart()
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStart(time.Date(2026, 3, 2, 10, 15, 0, 0, time.UTC), jobs.Scheduled, "quarter")
	h.end(nil)
	clock.To(t, time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC))
	h.wantStart(time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC), jobs.Scheduled, "quarter")
	h.end(errors.New("the model server is down"))
	st := h.s.Status()[1]
	if st.Last == nil || st.Last.Outcome != "failed: the model server is down" || !st.Last.Due.Equal(time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)) ||
		st.Last.Trigger != jobs.Scheduled || !st.Next.Equal(time.Date(2026, 3, 2, 10, 45, 0, 0, time.UTC)) || st.Last.Ended.IsZero() {
		t.Errorf("status %+v %+v", st, st.Last)
	}
	clock.To(t, time.Date(2026, 3, 2, 10, 45, 0, 0, time.UTC))
	h.wantStart(time.Date(2026, 3, 2, 10, 45, 0, 0, time.UTC), jobs.Scheduled, "quarter")
	h.end(nil)
	// Both are due at 11:00: each starts.
	clock.To(t, time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC))
	h.wantStarts(time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC), jobs.Scheduled, "daily", "quarter")
	h.end(nil)
	h.end(nil)
	h.wantNoStart()
}
