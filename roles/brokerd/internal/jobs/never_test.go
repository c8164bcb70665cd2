package jobs

import (
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// TestCronNeverRunsRefused (issue 29): a line that parses but never runs
// in its zone is refused at load, naming why, rather than loaded as a job
// whose next due time is "never". The days such a line picks all fall on
// the day a DST gap swallows its only wall time: "30 2 25-31 3 */7" is
// 02:30 on the last Sunday of March, which is the very night Berlin skips
// from 02:00 to 03:00.
func TestCronNeverRunsRefused(t *testing.T) {
	berlin, newYork := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	for _, tc := range []struct {
		line  string
		loc   *time.Location
		never bool
	}{
		{"30 2 25-31 3 */7", berlin, true},
		{"0,30 2 25-31 3 0", berlin, false}, // day of month or Sunday: any day 25-31
		{"*/15 2 25-31 3 */7", berlin, true},
		{"30 2 25-31 3 */7", time.UTC, false},
		{"30 2 25-31 3 */7", newYork, false},
		{"30 2 8-14 3 */7", newYork, true}, // second Sunday of March
		{"59 2 8-14 3 */7", newYork, true},
		{"59 2 8-14 3 0-0", newYork, false}, // neither starts with "*": either matches
		{"30 2 * * *", berlin, false},
		{"0 3 25-31 3 */7", berlin, false},
	} {
		_, err := ParseCronIn(tc.line, tc.loc)
		switch {
		case tc.never && err == nil:
			t.Errorf("%q in %s: accepted, but it never runs there", tc.line, tc.loc)
		case tc.never && !strings.Contains(err.Error(), "never runs in "+tc.loc.String()):
			t.Errorf("%q in %s: %v", tc.line, tc.loc, err)
		case !tc.never && err != nil:
			t.Errorf("%q in %s: %v", tc.line, tc.loc, err)
		}
	}
	// Through a job file, the problem names the schedule's line.
	file := "prompt = \"p\"\nresult = \"post\"\nschedule = \"30 2 25-31 3 */7\"\n"
	_, ps := parseJob("j.toml", "j", []byte(file), berlin)
	if len(ps) != 1 || ps[0].Line != 3 || !strings.Contains(ps[0].Problem, "schedule: ") || !strings.Contains(ps[0].Problem, "never runs") {
		t.Errorf("problems %v", ps)
	}
}

// TestEveryWholeSeconds (issue 29): an interval is a whole number of
// seconds. The state file keeps due times to the millisecond, so a due
// time with a fraction below it reads back as before itself, and a restart
// would find its run still missed and catch it up a second time.
func TestEveryWholeSeconds(t *testing.T) {
	for _, tc := range []struct {
		every string
		ok    bool
	}{
		{"1m0.5s", false},
		{"90.5s", false},
		{"1m0.0005s", false},
		{"60000000001ns", false},
		{"1h0.001s", false},
		{"90s", true},
		{"1h30m", true},
		{"60000000000ns", true},
		{"1.5h", true},
	} {
		file := "every = \"" + tc.every + "\"\nprompt = \"p\"\nresult = \"post\"\n"
		j, ps := parseJob("j.toml", "j", []byte(file), time.UTC)
		if tc.ok != (len(ps) == 0) {
			t.Errorf("every %q: problems %v", tc.every, ps)
			continue
		}
		if !tc.ok && (ps[0].Line != 1 || !strings.Contains(ps[0].Problem, "whole number of seconds")) {
			t.Errorf("every %q: %v", tc.every, ps)
		}
		if tc.ok {
			checkEveryRoundTrip(t, j.Schedule, time.Date(2026, 3, 2, 10, 7, 0, 0, time.UTC))
		}
	}
}

// checkEveryRoundTrip: a due time, stored in the state file and read back,
// is not due again.
func checkEveryRoundTrip(t *testing.T, s Schedule, at time.Time) {
	t.Helper()
	due := s.Next(at)
	if back := wire.TimestampOf(due).Time(); !s.Next(back).After(due) {
		t.Errorf("%s: due %s, stored as %s, is due again at %s", s, due, back, s.Next(back))
	}
}
