package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs/jobstest"
	"boxmaker/wire"
)

// TestInvalidJobSetKeepsTheRecords: a job set with a problem runs no job
// (jobs-invalid), but it is a guard that cannot read what it guards
// (issue 29, class 1): it must not erase what the scheduler remembers.
// Before, the invalid set counted as "no jobs", so every job's record left
// jobs.json: its last run vanished from bxctl jobs and a run missed while
// brokerd was down was never caught up. Both ways are tried: the set
// broken while brokerd runs, and broken over a restart.
func TestInvalidJobSetKeepsTheRecords(t *testing.T) {
	for _, overRestart := range []bool{false, true} {
		t.Run(map[bool]string{false: "while running", true: "over a restart"}[overRestart], func(t *testing.T) {
			clock := jobstest.NewClock(jobsT0)
			jobFiles := map[string]string{
				"catchy.toml": "every = \"1h\"\nprompt = \"Catch up.\"\nresult = \"note\"\ncatch_up = true\n",
			}
			var loop *fakeLoop
			h := start(t, nil, withJobs(t, jobFiles, clock), func(o *Options) { loop = listenLoop(t, o.Config.Sockets.Loop) })
			clock.WaitIdle(t, 0)
			clock.To(t, jobsT0.Add(30*time.Minute))
			loop.next(t).answer(t, "done")
			lastOf := func() *wire.JobLastRun {
				list, ok := h.admin(wire.JobsList{}).(wire.JobList)
				if !ok {
					t.Fatal("no job list")
				}
				for _, it := range list.Items {
					if it.Name == "catchy" {
						return it.Last
					}
				}
				return nil
			}
			eventually(t, "the 11:00 run to end", func() bool { l := lastOf(); return l != nil && l.Ended != nil })

			bad := filepath.Join(h.cfg.Paths.Jobs, "typo.toml")
			if err := os.WriteFile(bad, []byte("every = \"1h\"\npromt = \"x\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if overRestart {
				h.stop()
				clock.Advance(3*time.Hour + 10*time.Minute) // 12:00, 13:00 and 14:00 missed
				h.restart(withJobs(t, nil, clock))
			} else {
				list := h.admin(wire.JobsList{}).(wire.JobList)
				if len(list.Problems) != 1 || len(list.Items) != 0 {
					t.Fatalf("with a typo: %+v", list)
				}
			}
			state, err := os.ReadFile(filepath.Join(h.cfg.Paths.Home, "broker", "jobs.json"))
			if err != nil {
				t.Fatal(err)
			}
			if want := `"name":"catchy"`; !strings.Contains(string(state), want) {
				t.Fatalf("jobs.json lost catchy's record while the set was invalid: %s", state)
			}
			select {
			case s := <-loop.says:
				t.Fatalf("a run while the set is invalid: %q", s.say.Text)
			case <-time.After(100 * time.Millisecond):
			}

			// Fixed: the last run is still known, and over a restart the
			// run missed while brokerd was down is caught up once.
			if err := os.Remove(bad); err != nil {
				t.Fatal(err)
			}
			// (Over a restart the catch-up may already be its last run.)
			if last := lastOf(); last == nil || !overRestart && last.Due.Time() != jobsT0.Add(30*time.Minute) {
				t.Fatalf("after the fix, catchy's last run: %+v", last)
			}
			if overRestart {
				caught := loop.next(t)
				if caught.say.Text != "Catch up." {
					t.Fatalf("after the fix, %q ran", caught.say.Text)
				}
				caught.answer(t, "caught up")
				eventually(t, "the catch-up run to end", func() bool {
					l := lastOf()
					return l != nil && l.Ended != nil && l.Trigger == wire.TriggerCatchUp
				})
			}
			select {
			case s := <-loop.says:
				t.Fatalf("a second run after the fix: %q", s.say.Text)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}
