package jobs

import "time"

// Next walks the wall-clock calendar of c's zone from the minute after
// after's, field by field, and returns the first matching wall time that
// happens after after. Daylight saving time (docs/decisions.md):
//   - a wall time that does not exist (the hour skipped in spring) is
//     skipped: "30 2 * * *" does not run on that day;
//   - a wall time that happens twice (the hour repeated in autumn) is due
//     once, at its first occurrence: a job runs once in the repeated hour,
//     and "*/15 * * * *" does not run during its second pass.
//
// The search is bounded by 400 years, the Gregorian calendar's cycle, in
// which every line that parses matches; the zero Time is returned past it.
func (c *cron) Next(after time.Time) time.Time {
	w := after.In(c.loc)
	// The first candidate, as a wall time written in UTC so that adding a
	// minute normalises the calendar without any zone's rules.
	s := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute()+1, 0, 0, time.UTC)
	for y := s.Year(); y <= s.Year()+400; y++ {
		for m := time.January; m <= time.December; m++ {
			if c.month&(1<<int(m)) == 0 || y == s.Year() && m < s.Month() {
				continue
			}
			startMonth := y == s.Year() && m == s.Month()
			days := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
			for d := 1; d <= days; d++ {
				if startMonth && d < s.Day() {
					continue
				}
				if !c.dayMatches(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)) {
					continue
				}
				startDay := startMonth && d == s.Day()
				if t, ok := c.nextInDay(after, s, startDay, y, m, d); ok {
					return t
				}
			}
		}
	}
	return time.Time{}
}

// nextInDay is the first matching time of one day that is after after, on
// the start day only from s's hour and minute.
func (c *cron) nextInDay(after, s time.Time, startDay bool, y int, m time.Month, d int) (time.Time, bool) {
	for h := 0; h < 24; h++ {
		if c.hour&(1<<h) == 0 || startDay && h < s.Hour() {
			continue
		}
		for mi := 0; mi < 60; mi++ {
			if c.minute&(1<<mi) == 0 || startDay && h == s.Hour() && mi < s.Minute() {
				continue
			}
			if t, ok := firstInstant(c.loc, y, m, d, h, mi); ok && t.After(after) {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// firstInstant is the earliest instant whose wall time in loc is the given
// minute, and false if the minute does not exist there (a DST gap).
// time.Date alone cannot say: it normalises a missing time forward and
// picks either occurrence of a repeated one. Every instant with this wall
// time is the wall time read as UTC less a UTC offset in force within
// fourteen hours of it, so the offsets at a few points of that window are
// tried, each kept only if it really gives this wall time.
func firstInstant(loc *time.Location, y int, m time.Month, d, h, mi int) (time.Time, bool) {
	u := time.Date(y, m, d, h, mi, 0, 0, time.UTC)
	var best time.Time
	found := false
	probes := [4]time.Time{u.Add(-14 * time.Hour), u, u.Add(14 * time.Hour), time.Date(y, m, d, h, mi, 0, 0, loc)}
	for _, p := range probes {
		_, off := p.In(loc).Zone()
		t := u.Add(-time.Duration(off) * time.Second).In(loc)
		if t.Year() != y || t.Month() != m || t.Day() != d || t.Hour() != h || t.Minute() != mi {
			continue
		}
		if !found || t.Before(best) {
			best, found = t, true
		}
	}
	return best, found
}
