package jobs

import (
	"testing"
	"time"
)

// TestCronDST pins the DST rules in real zones: a wall time that does not
// exist is skipped, and one that happens twice is due once, at its first
// occurrence.
func TestCronDST(t *testing.T) {
	berlin, newYork := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		loc  *time.Location
		line string
		// after, then each following due time, in UTC.
		after string
		want  []string
	}{
		{"Berlin spring: 02:30 does not exist on 29 March, skipped", berlin, "30 2 * * *",
			"2026-03-28T00:00:00Z", []string{"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin spring: */15 jumps from 01:45 CET to 03:00 CEST", berlin, "*/15 * * * *",
			"2026-03-29T00:40:00Z", []string{"2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"}},
		{"Berlin autumn: 02:30 runs once, in CEST", berlin, "30 2 * * *",
			"2026-10-24T12:00:00Z", []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin autumn: */15 does not run in the second pass of 02:xx", berlin, "*/15 * * * *",
			"2026-10-25T00:40:00Z", []string{"2026-10-25T00:45:00Z", "2026-10-25T02:00:00Z"}},
		{"Berlin autumn: from inside the second pass, the repeated wall times are past", berlin, "30 2 * * *",
			"2026-10-25T01:10:00Z", []string{"2026-10-26T01:30:00Z"}},
		{"Berlin autumn: 03:00 exists once", berlin, "0 3 * * *",
			"2026-10-24T12:00:00Z", []string{"2026-10-25T02:00:00Z", "2026-10-26T02:00:00Z"}},
		{"New York spring: 02:00-02:59 skipped on 8 March", newYork, "0,30 2 * * *",
			"2026-03-07T12:00:00Z", []string{"2026-03-09T06:00:00Z", "2026-03-09T06:30:00Z"}},
		{"New York autumn: 01:30 runs once, in EDT", newYork, "30 1 * * *",
			"2026-10-31T12:00:00Z", []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"New York: an hourly job loses the repeated hour, not its count of wall times", newYork, "0 * * * *",
			"2026-11-01T04:30:00Z", []string{"2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
	} {
		s, err := ParseCronIn(tc.line, tc.loc)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		at := utc(tc.after)
		for _, w := range tc.want {
			got := s.Next(at)
			if !got.Equal(utc(w)) {
				t.Errorf("%s: after %s: %s, want %s", tc.name, at.In(tc.loc), got.In(tc.loc), utc(w).In(tc.loc))
				break
			}
			at = got
		}
	}
	// every is absolute time: DST does not move it or make it skip.
	e := Every(30 * time.Minute)
	at := utc("2026-10-25T00:40:00Z")
	for _, w := range []string{"2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z"} {
		got := e.Next(at.In(berlin))
		if !got.Equal(utc(w)) {
			t.Errorf("every 30m across Berlin's autumn change: %s, want %s", got, w)
		}
		at = got
	}
}

// TestParseCronLocal: ParseCron reads times in time.Local.
func TestParseCronLocal(t *testing.T) {
	s, err := ParseCron("0 7 * * *")
	if err != nil {
		t.Fatal(err)
	}
	if s.(*cron).loc != time.Local {
		t.Errorf("ParseCron's zone is %v, want time.Local", s.(*cron).loc)
	}
}
