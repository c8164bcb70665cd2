package jobs_test

import (
	"os"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/jobs/jobstest"
	"boxmaker/wire"
)

// never is a schedule with no due time, as Next says of a line that cannot
// run within its search (the zero Time).
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }
func (never) String() string           { return "never" }

// TestSchedulerNeverDue (issue 29): a job whose schedule has no next due
// time neither spins the scheduler (a wait of "zero Time minus now" is
// negative, so a timer of 0 fired at once, forever) nor is caught up at
// start as if its run due at the zero Time had been missed.
func TestSchedulerNeverDue(t *testing.T) {
	path := statePath(t)
	clock := jobstest.NewClock(t0)
	nj := jobs.Job{Name: "never", Schedule: never{}, Prompt: "p", Result: jobs.ResultPost, CatchUp: true, Sha256: wire.Sha256([]byte("never"))}
	h := newHarness(t, clock, path, nj, job(t, "hourly", "1h", false))
	h.run()
	made, _ := clock.State()
	time.Sleep(50 * time.Millisecond)
	if now, _ := clock.State(); now > made {
		t.Fatalf("the scheduler set %d timers in 50ms without the clock moving: it spins", now-made)
	}
	clock.To(t, t0.Add(53*time.Minute))
	h.wantStart(t0.Add(53*time.Minute), jobs.Scheduled, "hourly")
	h.end(nil)
	h.stop()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	// Restarted a day later: nothing of "never" was missed.
	clock = jobstest.NewClock(t0.Add(24 * time.Hour))
	h = newHarness(t, clock, path, nj)
	h.run()
	h.wantNoStart()
	if st := h.s.Status(); len(st) != 1 || !st[0].Next.IsZero() {
		t.Errorf("status %+v", st)
	}
}
