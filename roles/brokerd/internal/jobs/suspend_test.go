package jobs_test

import (
	"errors"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/jobs/jobstest"
)

// TestSuspendKeepsTheRecords: while the job files have a problem the set
// is suspended: nothing runs, nothing is listed, RunNow finds no job, but
// no record leaves the state file. Fixed again (Replace), a job that says
// catch_up runs once for the due times it missed, and one that does not
// waits for its next due time; a job dropped by the fixed set loses its
// record then, not before.
func TestSuspendKeepsTheRecords(t *testing.T) {
	for _, before := range []bool{false, true} {
		t.Run(map[bool]string{false: "while running", true: "before Run"}[before], func(t *testing.T) {
			path := statePath(t)
			set := []jobs.Job{job(t, "catch", "15m", true), job(t, "plain", "15m", false), job(t, "gone", "15m", false)}
			clock := jobstest.NewClock(t0)
			h := newHarness(t, clock, path, set...)
			h.run()
			clock.To(t, t0.Add(8*time.Minute)) // 10:15
			h.wantStarts(t0.Add(8*time.Minute), jobs.Scheduled, "catch", "plain", "gone")
			for range 3 {
				h.end(nil)
			}
			first, err := jobs.ReadStateChecked(path)
			if err != nil || len(first) != 3 {
				t.Fatalf("state before: %v %v", first, err)
			}
			if before {
				h.stop()
				clock.Advance(time.Hour)
				h = newHarness(t, clock, path)
				h.s.Suspend()
				h.run()
			} else {
				h.s.Suspend()
				clock.To(t, t0.Add(68*time.Minute)) // 11:15: four due times pass
			}
			h.wantNoStart()
			if st := h.s.Status(); len(st) != 0 {
				t.Fatalf("listed while suspended: %+v", st)
			}
			if _, err := h.s.RunNow("catch"); !errors.Is(err, jobs.ErrNoJob) {
				t.Fatalf("RunNow while suspended: %v", err)
			}
			kept, err := jobs.ReadStateChecked(path)
			if err != nil || len(kept) != 3 {
				t.Fatalf("state while suspended: %v %v, want the three records", kept, err)
			}
			for name, at := range first {
				if !kept[name].Equal(at) {
					t.Fatalf("%s: checked %s while suspended, was %s", name, kept[name], at)
				}
			}

			if err := h.s.Replace(set[:2]); err != nil {
				t.Fatal(err)
			}
			h.wantStart(t0.Add(23*time.Minute), jobs.CatchUp, "catch") // 10:30, the first missed
			h.end(nil)
			h.wantNoStart()
			if !h.logged("jobs: plain: missed its run due") {
				t.Fatalf("plain's missed run not logged: %q", h.logs)
			}
			after, err := jobs.ReadStateChecked(path)
			if _, ok := after["gone"]; err != nil || ok || len(after) != 2 {
				t.Fatalf("state after the fix: %v %v", after, err)
			}
		})
	}
}
