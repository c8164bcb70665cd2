package jobs

import (
	"strings"
	"testing"
	"time"
)

// FuzzCron: the parser never panics; a line it accepts re-parses from its
// String to the same schedule, and has a next due time after any instant.
func FuzzCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 7 * * 1-5", "*/15 */6 1,15 */3 0,7", "10-40/10 0 * * 7", "@daily",
		"@reboot", "0 0 30 2 *", "60 * * * *", "5/10 * * * *", "1,,2 * * * *", "0 0 29 2 */7", " 1\t2 3 4 5 "} {
		f.Add(s)
	}
	berlin := mustZone(f, "Europe/Berlin")
	f.Fuzz(func(t *testing.T, s string) {
		sch, err := ParseCronIn(s, berlin)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cron: ") {
				t.Fatalf("%q: error without the package's prefix: %v", s, err)
			}
			return
		}
		again, err := ParseCronIn(sch.String(), berlin)
		if err != nil {
			t.Fatalf("%q: String %q does not parse: %v", s, sch.String(), err)
		}
		if *again.(*cron) != *sch.(*cron) {
			t.Fatalf("%q: re-parsed %+v, first %+v", s, again, sch)
		}
		after := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)
		if next := sch.Next(after); !next.After(after) {
			t.Fatalf("%q: Next(%s) = %s", s, after, next)
		}
	})
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
