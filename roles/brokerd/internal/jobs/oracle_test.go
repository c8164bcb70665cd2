package jobs

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	// The DST tests need real zones; the embedded database makes them
	// independent of the host's /usr/share/zoneinfo (a test binary only).
	_ "time/tzdata"
)

// oracleMatch evaluates a cron line against a wall time the slow way: each
// item of each field is tested for containing the value, straight from the
// text, with none of the parser's code.
func oracleMatch(line string, w time.Time) bool {
	f := strings.Fields(line)
	in := func(field string, v, min, max int) bool {
		for item := range strings.SplitSeq(field, ",") {
			r, st, hasStep := strings.Cut(item, "/")
			step := 1
			if hasStep {
				step, _ = strconv.Atoi(st)
			}
			lo, hi := -1, -1
			switch {
			case r == "*":
				lo, hi = min, max
			case strings.Contains(r, "-"):
				a, b, _ := strings.Cut(r, "-")
				lo, _ = strconv.Atoi(a)
				hi, _ = strconv.Atoi(b)
			default:
				lo, _ = strconv.Atoi(r)
				hi = lo
			}
			if v >= lo && v <= hi && (v-lo)%step == 0 {
				return true
			}
		}
		return false
	}
	wd := int(w.Weekday())
	dom := in(f[2], w.Day(), 1, 31)
	dow := in(f[4], wd, 0, 7) || wd == 0 && in(f[4], 7, 0, 7)
	day := dom && dow
	if f[2][0] != '*' && f[4][0] != '*' {
		day = dom || dow
	}
	return in(f[0], w.Minute(), 0, 59) && in(f[1], w.Hour(), 0, 23) && in(f[3], int(w.Month()), 1, 12) && day
}

// oracleNext steps minute by minute through absolute time, from three hours
// before after (so the first pass of a repeated hour is seen), and returns
// the first minute after after that matches and whose wall time has not
// been seen before (a repeated wall time is due only once). Wall times
// that do not exist are never visited. false: none before after+bound.
func oracleNext(line string, loc *time.Location, after time.Time, bound time.Duration) (time.Time, bool) {
	maxWall := ""
	for m := after.Truncate(time.Minute).Add(-3 * time.Hour); m.Before(after.Add(bound)); m = m.Add(time.Minute) {
		w := m.In(loc)
		key := w.Format("2006-01-02 15:04")
		repeat := key <= maxWall
		if !repeat {
			maxWall = key
		}
		if m.After(after) && !repeat && oracleMatch(line, w) {
			return m, true
		}
	}
	return time.Time{}, false
}

// randomField makes a field of f's range: mostly "*", or a list of items.
func randomField(r *rand.Rand, f cronField, star float64) string {
	if r.Float64() < star {
		if r.IntN(4) == 0 {
			return fmt.Sprintf("*/%d", 1+r.IntN(min(f.max, 20)))
		}
		return "*"
	}
	var items []string
	for range 1 + r.IntN(3) {
		a := f.min + r.IntN(f.max-f.min+1)
		switch r.IntN(3) {
		case 0:
			items = append(items, strconv.Itoa(a))
		case 1:
			b := a + r.IntN(f.max-a+1)
			items = append(items, fmt.Sprintf("%d-%d", a, b))
		default:
			b := a + r.IntN(f.max-a+1)
			items = append(items, fmt.Sprintf("%d-%d/%d", a, b, 1+r.IntN(f.max)))
		}
	}
	return strings.Join(items, ",")
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("zone %s: %v", name, err)
	}
	return loc
}

// TestCronNextOracle compares Next with the oracle on random lines, zones
// and start times, half of them within a day of a DST change.
func TestCronNextOracle(t *testing.T) {
	berlin, newYork, lordHowe := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York"), mustZone(t, "Australia/Lord_Howe")
	zones := []*time.Location{time.UTC, berlin, newYork, lordHowe} // Lord Howe moves its clocks by 30 minutes
	changes := []struct {
		loc *time.Location
		at  time.Time
	}{
		{berlin, time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},     // spring: 02:00-02:59 do not exist
		{berlin, time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)},    // autumn: 02:00-02:59 twice
		{newYork, time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)},     // spring
		{newYork, time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},    // autumn
		{lordHowe, time.Date(2026, 4, 4, 15, 0, 0, 0, time.UTC)},   // autumn, 01:30-01:59 twice
		{lordHowe, time.Date(2026, 10, 3, 15, 30, 0, 0, time.UTC)}, // spring, 02:00-02:29 do not exist
	}
	r := rand.New(rand.NewPCG(17, 5))
	const bound = 4 * 24 * time.Hour
	n := 600
	if testing.Short() {
		n = 100
	}
	for i := range n {
		line := strings.Join([]string{
			randomField(r, cronFields[0], 0.3), randomField(r, cronFields[1], 0.5),
			randomField(r, cronFields[2], 0.85), randomField(r, cronFields[3], 0.9),
			randomField(r, cronFields[4], 0.8),
		}, " ")
		loc := zones[r.IntN(len(zones))]
		var after time.Time
		if i%2 == 0 {
			c := changes[r.IntN(len(changes))]
			loc, after = c.loc, c.at.Add(time.Duration(r.Int64N(int64(6*time.Hour)))-4*time.Hour)
		} else {
			after = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(365 * 24 * time.Hour))))
		}
		s, err := ParseCronIn(line, loc)
		if err != nil {
			continue // an unreachable line; the parser's tests cover refusals
		}
		after = after.Add(time.Duration(r.IntN(3)) * 20 * time.Second)
		got := s.Next(after)
		want, ok := oracleNext(line, loc, after, bound)
		switch {
		case ok && !got.Equal(want):
			t.Errorf("%q in %s after %s: Next %s, oracle %s", line, loc, after.In(loc), got.In(loc), want.In(loc))
		case !ok && got.Before(after.Add(bound)):
			t.Errorf("%q in %s after %s: Next %s, oracle none within %s", line, loc, after.In(loc), got.In(loc), bound)
		}
	}
}
