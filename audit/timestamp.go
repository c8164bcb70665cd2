package audit

import "boxmaker/wire"

// dateCache remembers the day of the last timestamp read: consecutive records
// almost always share it, and the calendar arithmetic is then skipped.
type dateCache struct {
	date [10]byte
	days int64
	ok   bool
}

// timestamp reads "2026-09-17T08:05:00.000Z", accepting exactly what
// wire.ParseTimestamp accepts: a real calendar date from 1970 to 9999, hours
// below 24, minutes and seconds below 60, three digits of milliseconds.
func (c *dateCache) timestamp(b []byte, i int) (wire.Timestamp, int) {
	if i < 0 || len(b)-i < 26 || b[i] != '"' || b[i+25] != '"' {
		return 0, -1
	}
	s := b[i+1 : i+25]
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return 0, -1
	}
	if !c.ok || string(s[:10]) != string(c.date[:]) {
		y, m, d := digits(s[0:4]), digits(s[5:7]), digits(s[8:10])
		if y < 1970 || m < 1 || m > 12 || d < 1 || d > daysIn(m, y) {
			return 0, -1
		}
		copy(c.date[:], s[:10])
		c.days, c.ok = daysFromCivil(y, m, d), true
	}
	hh, mm, ss, ms := digits(s[11:13]), digits(s[14:16]), digits(s[17:19]), digits(s[20:23])
	if hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59 || ms < 0 {
		return 0, -1
	}
	t := ((c.days*24+hh)*60+mm)*60 + ss
	return wire.Timestamp(t*1000 + ms), i + 26
}

// digits is the decimal value of s, or -1 if s holds anything but digits.
func digits(s []byte) int64 {
	var v int64
	bad := false
	for _, c := range s {
		d := c - '0'
		bad = bad || d > 9 // c below '0' wraps around, above 9 too
		v = v*10 + int64(d)
	}
	if bad {
		return -1
	}
	return v
}

func daysIn(m, y int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts days from 1970-01-01 to y-m-d (Howard Hinnant's
// algorithm; y >= 1970 here, so no negative years arise).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
