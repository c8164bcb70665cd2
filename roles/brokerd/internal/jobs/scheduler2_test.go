package jobs_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/jobs/jobstest"
)

func TestSchedulerOverlapSkipped(t *testing.T) {
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, statePath(t), job(t, "slow", "15m", false))
	h.run()
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStart(t0.Add(8*time.Minute), jobs.Scheduled, "slow")
	clock.To(t, t0.Add(23*time.Minute)) // 10:30, the 10:15 run still going
	select {
	case r := <-h.skipped:
		if !r.Due.Equal(t0.Add(23*time.Minute)) || r.Trigger != jobs.Scheduled || r.Job.Name != "slow" {
			t.Errorf("skipped %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Skipped was not called")
	}
	h.wantNoStart()
	if !h.logged("slow: run due 2026-03-02T10:30:00.000Z skipped: the previous run is still going") {
		t.Errorf("log %q", h.logs)
	}
	// The next due time is scheduled normally.
	if st := h.s.Status()[0]; !st.Next.Equal(t0.Add(38*time.Minute)) || st.Last.Outcome != "running" || !st.Last.Due.Equal(t0.Add(8*time.Minute)) {
		t.Errorf("status %+v %+v", st, st.Last)
	}
	h.end(nil)
	clock.To(t, t0.Add(38*time.Minute))
	h.wantStart(t0.Add(38*time.Minute), jobs.Scheduled, "slow")
	select {
	case r := <-h.skipped:
		t.Errorf("skipped again: %+v", r)
	default:
	}
}

// TestSchedulerCatchUp: a job with catch_up that missed several slots while
// the scheduler was stopped runs once at start, for the first missed slot;
// one without catch_up waits; one never seen before has nothing to catch up.
func TestSchedulerCatchUp(t *testing.T) {
	path := statePath(t)
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, path, job(t, "catch", "15m", true), job(t, "nocatch", "15m", false))
	h.run()
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStarts(t0.Add(8*time.Minute), jobs.Scheduled, "catch", "nocatch")
	h.end(nil)
	h.end(nil)
	h.stop()

	// Down from 10:15 until 12:20: 10:30 to 12:15 missed, eight slots.
	clock = jobstest.NewClock(time.Date(2026, 3, 2, 12, 20, 0, 0, time.UTC))
	h = newHarness(t, clock, path, job(t, "catch", "15m", true), job(t, "nocatch", "15m", false), job(t, "fresh", "15m", true))
	h.run()
	h.wantStart(time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC), jobs.CatchUp, "catch")
	h.wantNoStart()
	if !h.logged("nocatch: missed its run due 2026-03-02T10:30:00.000Z while stopped; catch_up is false") {
		t.Errorf("log %q", h.logs)
	}
	st := h.s.Status()
	if st[0].Name != "catch" || st[0].Last.Trigger != jobs.CatchUp || !st[0].Last.Started.Equal(clock.Now()) || st[1].Name != "fresh" || st[1].Last != nil {
		t.Errorf("status %+v", st)
	}
	h.end(nil)
	// Then each runs at its next slot, catch-up or not.
	clock.To(t, time.Date(2026, 3, 2, 12, 30, 0, 0, time.UTC))
	h.wantStarts(time.Date(2026, 3, 2, 12, 30, 0, 0, time.UTC), jobs.Scheduled, "catch", "fresh", "nocatch")
	for range 3 {
		h.end(nil)
	}
	h.stop()

	// A restart with no slot missed catches nothing up, and "fresh" was
	// recorded as seen: it is caught up after a gap like the others.
	clock = jobstest.NewClock(time.Date(2026, 3, 2, 12, 40, 0, 0, time.UTC))
	h = newHarness(t, clock, path, job(t, "catch", "15m", true), job(t, "fresh", "15m", true))
	h.run()
	h.wantNoStart()
	h.stop()
	clock = jobstest.NewClock(time.Date(2026, 3, 2, 13, 10, 0, 0, time.UTC))
	h = newHarness(t, clock, path, job(t, "catch", "15m", true), job(t, "fresh", "15m", true))
	h.run()
	h.wantStarts(time.Date(2026, 3, 2, 12, 45, 0, 0, time.UTC), jobs.CatchUp, "catch", "fresh")
	h.wantNoStart()
}

func TestSchedulerDamagedState(t *testing.T) {
	path := statePath(t)
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
	for _, damage := range []string{"", "{", strings.Replace(string(good), `"version":1`, `"version":2`, 1),
		strings.Replace(string(good), `"catch"`, `"Catch"`, 1), strings.Replace(string(good), `"scheduled"`, `"later"`, 1),
		string(good) + "\n", strings.Replace(string(good), `"checked"`, `"Checked"`, 1)} {
		if err := os.WriteFile(path, []byte(damage), 0o644); err != nil {
			t.Fatal(err)
		}
		// The last round's copy goes, so this round's takes its name
		// (TestDamagedCopiesAreKept: otherwise it would be .damaged.1).
		if err := os.RemoveAll(path + ".damaged"); err != nil {
			t.Fatal(err)
		}
		clock := jobstest.NewClock(time.Date(2026, 3, 2, 12, 20, 0, 0, time.UTC))
		h := newHarness(t, clock, path, job(t, "catch", "15m", true))
		if !h.logged("see docs/runbook.md#jobs-state-damaged") || !h.logged("the damaged file is kept as "+path+".damaged") {
			t.Errorf("%q: log %q", damage, h.logs)
		}
		if kept, err := os.ReadFile(path + ".damaged"); err != nil || string(kept) != damage {
			t.Errorf("%q: kept %q %v", damage, kept, err)
		}
		// Fail closed: no catch-up, but scheduled normally, and the file
		// is good again.
		h.run()
		h.wantNoStart()
		clock.To(t, time.Date(2026, 3, 2, 12, 30, 0, 0, time.UTC))
		h.wantStart(time.Date(2026, 3, 2, 12, 30, 0, 0, time.UTC), jobs.Scheduled, "catch")
		h.end(nil)
		h.stop()
		if _, err := jobs.ReadStateChecked(path); err != nil {
			t.Errorf("%q: the state file after: %v", damage, err)
		}
	}
}

func TestSchedulerRunNow(t *testing.T) {
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, statePath(t), job(t, "report", "0 18 * * *", false))
	if _, err := h.s.RunNow("report"); !errors.Is(err, jobs.ErrStopped) {
		t.Errorf("RunNow before jobs.Run: %v", err)
	}
	h.run()
	clock.To(t, t0.Add(3*time.Minute))
	r, err := h.s.RunNow("report")
	if err != nil || r.Trigger != jobs.Manual || !r.Due.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("RunNow: %+v %v", r, err)
	}
	h.wantStart(t0.Add(3*time.Minute), jobs.Manual, "report")
	if _, err := h.s.RunNow("report"); !errors.Is(err, jobs.ErrRunning) {
		t.Errorf("RunNow while running: %v", err)
	}
	if _, err := h.s.RunNow("nope"); !errors.Is(err, jobs.ErrNoJob) {
		t.Errorf("RunNow of no job: %v", err)
	}
	select {
	case r := <-h.skipped:
		t.Errorf("Skipped called for a refused RunNow: %+v", r)
	default:
	}
	h.wantNoStart()
	st := h.s.Status()[0]
	if st.Last.Trigger != jobs.Manual || st.Last.Outcome != "running" || !st.Next.Equal(time.Date(2026, 3, 2, 18, 0, 0, 0, time.UTC)) {
		t.Errorf("status %+v %+v", st, st.Last)
	}
	h.end(nil)
	if _, err := h.s.RunNow("report"); err != nil {
		t.Errorf("RunNow after the run ended: %v", err)
	}
	h.wantStart(t0.Add(3*time.Minute), jobs.Manual, "report")
	h.end(nil)
	h.stop()
	if _, err := h.s.RunNow("report"); !errors.Is(err, jobs.ErrStopped) {
		t.Errorf("RunNow after jobs.Run returned: %v", err)
	}
}

// TestSchedulerStopWithRunInFlight: cancelling jobs.Run cancels the run's ctx,
// and jobs.Run returns only after Start has returned and its end is recorded.
func TestSchedulerStopWithRunInFlight(t *testing.T) {
	path := statePath(t)
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, path, job(t, "long", "15m", false))
	h.run()
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStart(t0.Add(8*time.Minute), jobs.Scheduled, "long")
	h.stop()
	select {
	case err := <-h.returns:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Start returned %v", err)
		}
	default:
		t.Fatal("jobs.Run returned before Start did")
	}
	h2 := newHarness(t, jobstest.NewClock(t0.Add(9*time.Minute)), path, job(t, "long", "15m", false))
	if st := h2.s.Status()[0]; st.Last == nil || st.Last.Outcome != "failed: context canceled" || st.Last.Ended.IsZero() {
		t.Errorf("after a stop: %+v", st.Last)
	}
	if err := h.s.Run(context.Background()); err == nil {
		t.Error("a second jobs.Run was accepted")
	}
}

// TestSchedulerStateSurvivesRestart: a new jobs.Scheduler on the same file reads
// the last runs back; a run going when brokerd stopped reads as failed.
func TestSchedulerStateSurvivesRestart(t *testing.T) {
	path := statePath(t)
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, path, job(t, "a", "15 * * * *", false), job(t, "b", "0 * * * *", false))
	h.run()
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStart(t0.Add(8*time.Minute), jobs.Scheduled, "a")
	clock.To(t, t0.Add(10*time.Minute))
	h.end(nil)
	clock.To(t, t0.Add(53*time.Minute))
	h.wantStart(t0.Add(53*time.Minute), jobs.Scheduled, "b")
	if _, err := h.s.RunNow("a"); err != nil {
		t.Fatal(err)
	}
	h.wantStart(t0.Add(53*time.Minute), jobs.Manual, "a")
	h.end(nil) // one of them; the other is going when brokerd "crashes"
	before := h.s.Status()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	crashed := statePath(t) // a copy of the file as the crash left it
	if err := os.WriteFile(crashed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, jobstest.NewClock(t0.Add(2*time.Hour)), crashed, job(t, "a", "15 * * * *", false), job(t, "b", "0 * * * *", false))
	after := h2.s.Status()
	for i := range before {
		b, a := before[i].Last, after[i].Last
		if a == nil || !a.Due.Equal(b.Due) || !a.Started.Equal(b.Started) || !a.Ended.Equal(b.Ended) || a.Trigger != b.Trigger {
			t.Errorf("%s: before %+v, after %+v", before[i].Name, b, a)
		}
		switch b.Outcome {
		case "ok":
			if a.Outcome != "ok" {
				t.Errorf("%s: outcome %q", before[i].Name, a.Outcome)
			}
		case "running":
			if a.Outcome != "failed: brokerd stopped before the run ended" {
				t.Errorf("%s: outcome %q", before[i].Name, a.Outcome)
			}
		default:
			t.Errorf("%s: outcome before %q", before[i].Name, b.Outcome)
		}
	}
	if !strings.HasPrefix(string(data), `{"version":1,"jobs":[{"name":"a","checked":"2026-03-02T10:15:00.000Z","last":{"due":"2026-03-02T11:00:00.000Z","started":"2026-03-02T11:00:00.000Z",`) {
		t.Errorf("the file: %s", data)
	}
}

func TestSchedulerReplace(t *testing.T) {
	path := statePath(t)
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, path, job(t, "keep", "15m", false), job(t, "gone", "15m", false))
	h.run()
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStarts(t0.Add(8*time.Minute), jobs.Scheduled, "gone", "keep")
	clock.To(t, t0.Add(10*time.Minute))
	made, _ := clock.State()
	changed := job(t, "keep", "5m", false)
	if err := h.s.Replace([]jobs.Job{changed, job(t, "new", "0 11 * * *", false)}); err != nil {
		t.Fatal(err)
	}
	clock.WaitIdle(t, made)
	if checked, _ := jobs.CheckedOf(h.s, "keep"); !checked.Equal(t0.Add(10 * time.Minute)) {
		t.Errorf("a changed job's slots before the change count as dealt with up to %s", checked)
	}
	st := h.s.Status()
	if len(st) != 2 || st[0].Name != "keep" || !st[0].Next.Equal(t0.Add(13*time.Minute)) || st[0].Schedule != "every 5m" ||
		st[1].Name != "new" || !st[1].Next.Equal(t0.Add(53*time.Minute)) {
		t.Errorf("status %+v", st)
	}
	// The removed job's run goes on and ends; "keep" is still running,
	// so its 10:20 slot is skipped.
	clock.To(t, t0.Add(13*time.Minute))
	select {
	case r := <-h.skipped:
		if r.Job.Name != "keep" {
			t.Errorf("skipped %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("keep's slot was not skipped")
	}
	h.end(nil)
	h.end(nil)
	if err := h.s.Replace([]jobs.Job{changed, changed}); err == nil {
		t.Error("a job twice was accepted")
	}
	if len(h.s.Status()) != 2 {
		t.Error("a refused Replace changed the set")
	}
	h.stop()
	recs, err := jobs.ReadStateChecked(path)
	if _, gone := recs["gone"]; err != nil || len(recs) != 2 || gone || !recs["new"].Equal(t0.Add(10*time.Minute)) {
		t.Errorf("state %v %v", recs, err)
	}
}

func TestNewRefuses(t *testing.T) {
	start := func(context.Context, jobs.Run) error { return nil }
	for _, tc := range []struct {
		name string
		js   []jobs.Job
		h    jobs.Hooks
	}{
		{"no Start", []jobs.Job{job(t, "a", "1h", false)}, jobs.Hooks{}},
		{"a name twice", []jobs.Job{job(t, "a", "1h", false), job(t, "a", "2h", false)}, jobs.Hooks{Start: start}},
		{"a bad name", []jobs.Job{job(t, "A", "1h", false)}, jobs.Hooks{Start: start}},
		{"no schedule", []jobs.Job{{Name: "a"}}, jobs.Hooks{Start: start}},
	} {
		if _, err := jobs.New(tc.js, statePath(t), jobstest.NewClock(t0), tc.h); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func TestStateUnwritable(t *testing.T) {
	clock := jobstest.NewClock(t0)
	h := newHarness(t, clock, "/nonexistent-hjobs/jobs.json", job(t, "a", "15m", false))
	h.run()
	if !h.logged("see docs/runbook.md#jobs-state-unwritable") {
		t.Errorf("log %q", h.logs)
	}
	clock.To(t, t0.Add(8*time.Minute))
	h.wantStart(t0.Add(8*time.Minute), jobs.Scheduled, "a")
	h.end(nil)
}

func TestTrigger(t *testing.T) {
	for _, tr := range []jobs.Trigger{jobs.Scheduled, jobs.CatchUp, jobs.Manual} {
		b, err := tr.MarshalText()
		var back jobs.Trigger
		if err != nil || back.UnmarshalText(b) != nil || back != tr {
			t.Errorf("%s: %q %v %v", tr, b, err, back)
		}
	}
	if jobs.Scheduled.String() != "scheduled" || jobs.CatchUp.String() != "catch_up" || jobs.Manual.String() != "manual" {
		t.Error("String")
	}
	if _, err := jobs.Trigger(0).MarshalText(); err == nil {
		t.Error("jobs.Trigger(0) marshalled")
	}
}
