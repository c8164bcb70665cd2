package jobs

import (
	"strings"
	"testing"
	"time"
)

// FuzzCron: the parser never panics; a line it accepts re-parses from its
// String to the same schedule; from any instant (fuzzed, and a few at DST
// changes) Next is the first due time after it: later than it, never the
// zero Time (a line that never runs is refused), a wall time that matches
// every field, at its first occurrence, with no matching minute skipped
// between, and Next of it later still.
func FuzzCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 7 * * 1-5", "*/15 */6 1,15 */3 0,7", "10-40/10 0 * * 7", "@daily",
		"@reboot", "0 0 30 2 *", "60 * * * *", "5/10 * * * *", "1,,2 * * * *", "0 0 29 2 */7", " 1\t2 3 4 5 ",
		"30 2 25-31 3 */7", "*/15 2 25-31 3 */7", "0,30 2 25-31 3 0", "59 23 31 12 *", "0 0 29 2 1"} {
		f.Add(s, int64(1774742400)) // 2026-03-29T00:00:00Z, Berlin's spring change
	}
	berlin := mustZone(f, "Europe/Berlin")
	f.Fuzz(func(t *testing.T, s string, at int64) {
		sch, err := ParseCronIn(s, berlin)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cron: ") {
				t.Fatalf("%q: error without the package's prefix: %v", s, err)
			}
			return
		}
		c := sch.(*cron)
		again, err := ParseCronIn(sch.String(), berlin)
		if err != nil {
			t.Fatalf("%q: String %q does not parse: %v", s, sch.String(), err)
		}
		if *again.(*cron) != *c {
			t.Fatalf("%q: re-parsed %+v, first %+v", s, again, sch)
		}
		// Instants from 1970 to 2200, the fuzzed one folded in.
		const span = 230 * 365 * 24 * 3600
		fuzzed := time.Unix((at%span+span)%span, 0)
		for _, after := range []time.Time{fuzzed, time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2027, 3, 28, 0, 59, 0, 0, time.UTC)} {
			next := sch.Next(after)
			if next.IsZero() || !next.After(after) {
				t.Fatalf("%q: Next(%s) = %s", s, after, next)
			}
			checkDue(t, c, after, next)
			if n2 := sch.Next(next); !n2.After(next) {
				t.Fatalf("%q: Next(%s) = %s, not later", s, next, n2)
			}
		}
	})
}

// checkDue: next's wall time matches c and is its first occurrence, and
// (within two days of after) no due minute lies between after and next.
func checkDue(t *testing.T, c *cron, after, next time.Time) {
	t.Helper()
	due := func(u time.Time) bool {
		w := u.In(c.loc)
		if c.minute&(1<<w.Minute()) == 0 || c.hour&(1<<w.Hour()) == 0 || c.month&(1<<int(w.Month())) == 0 ||
			!c.dayMatches(time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, time.UTC)) {
			return false
		}
		first, ok := firstInstant(c.loc, w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute())
		return ok && first.Equal(u)
	}
	if next.Second() != 0 || next.Nanosecond() != 0 || !due(next) {
		t.Fatalf("%s: Next(%s) = %s, which is not due", c, after, next.In(c.loc))
	}
	u := after.Truncate(time.Minute).Add(time.Minute)
	for i := 0; i < 2*24*60 && u.Before(next); i, u = i+1, u.Add(time.Minute) {
		if due(u) {
			t.Fatalf("%s: Next(%s) = %s skips %s", c, after, next.In(c.loc), u.In(c.loc))
		}
	}
}

// FuzzJobFile: the job file parser never panics, returns a job or
// problems (never both, never neither), and a job it returns is whole.
func FuzzJobFile(f *testing.F) {
	for _, s := range []string{validJob, "every = \"1h\"\nprompt = \"p\"\nresult = \"both\"\ncatch_up = true\nunattended_ask = \"deny\"\n",
		"schedule = 5\n", "a = 1\na = 2\n", "[x]\ny = 1\n", "every = \"30s\"\n", "prompt = \"\"\"\n\"\"\"\n", "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, ps := parseJob("job.toml", "job", data, time.UTC)
		if len(ps) > 0 {
			if j.Schedule != nil {
				t.Fatalf("a job and problems: %+v %v", j, ps)
			}
			for _, p := range ps {
				if p.File != "job.toml" || p.Line < 0 || p.Problem == "" {
					t.Fatalf("a problem %+v", p)
				}
			}
			return
		}
		if j.Name != "job" || j.Schedule == nil || strings.TrimSpace(j.Prompt) == "" || len(j.Prompt) > MaxPromptBytes ||
			j.Result < ResultPost || j.Result > ResultBoth {
			t.Fatalf("an incomplete job %+v from %q", j, data)
		}
	})
}
