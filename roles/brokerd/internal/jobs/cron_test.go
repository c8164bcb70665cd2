package jobs

import (
	"strings"
	"testing"
	"time"
)

// bitsOf lists the values set in a field's bits, for readable table tests.
func bitsOf(b uint64) []int {
	var out []int
	for v := range 64 {
		if b&(1<<v) != 0 {
			out = append(out, v)
		}
	}
	return out
}

func eqInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseCronValid(t *testing.T) {
	all := func(lo, hi int) []int {
		var out []int
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out
	}
	for _, tc := range []struct {
		line                          string
		minute, hour, dom, month, dow []int
		domStar, dowStar              bool
		text                          string
	}{
		{"* * * * *", all(0, 59), all(0, 23), all(1, 31), all(1, 12), all(0, 6), true, true, "* * * * *"},
		{"0 7 * * *", []int{0}, []int{7}, all(1, 31), all(1, 12), all(0, 6), true, true, "0 7 * * *"},
		{"  5,10 \t 1-3  * * * ", []int{5, 10}, []int{1, 2, 3}, all(1, 31), all(1, 12), all(0, 6), true, true, "5,10 1-3 * * *"},
		{"*/15 */6 1,15 */3 1-5", []int{0, 15, 30, 45}, []int{0, 6, 12, 18}, []int{1, 15}, []int{1, 4, 7, 10}, []int{1, 2, 3, 4, 5}, false, false, "*/15 */6 1,15 */3 1-5"},
		{"10-40/10 0 * * 7", []int{10, 20, 30, 40}, []int{0}, all(1, 31), all(1, 12), []int{0}, true, false, "10-40/10 0 * * 7"},
		{"0 0 * * 0,7", []int{0}, []int{0}, all(1, 31), all(1, 12), []int{0}, true, false, "0 0 * * 0,7"},
		{"0 0 * * 5-7", []int{0}, []int{0}, all(1, 31), all(1, 12), []int{0, 5, 6}, true, false, "0 0 * * 5-7"},
		{"59 23 31 12 *", []int{59}, []int{23}, []int{31}, []int{12}, all(0, 6), false, true, "59 23 31 12 *"},
		{"0 0 */2 * 1", []int{0}, []int{0}, []int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}, all(1, 12), []int{1}, true, false, "0 0 */2 * 1"},
		{"07 09 * * *", []int{7}, []int{9}, all(1, 31), all(1, 12), all(0, 6), true, true, "07 09 * * *"},
		{"0 0 29 2 *", []int{0}, []int{0}, []int{29}, []int{2}, all(0, 6), false, true, "0 0 29 2 *"},
		{"@daily", []int{0}, []int{0}, all(1, 31), all(1, 12), all(0, 6), true, true, "@daily"},
		{"@hourly", []int{0}, all(0, 23), all(1, 31), all(1, 12), all(0, 6), true, true, "@hourly"},
		{"@weekly", []int{0}, []int{0}, all(1, 31), all(1, 12), []int{0}, true, false, "@weekly"},
		{"@monthly", []int{0}, []int{0}, []int{1}, all(1, 12), all(0, 6), false, true, "@monthly"},
		{"@yearly", []int{0}, []int{0}, []int{1}, []int{1}, all(0, 6), false, true, "@yearly"},
	} {
		s, err := ParseCronIn(tc.line, time.UTC)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		c := s.(*cron)
		got := [][]int{bitsOf(c.minute), bitsOf(c.hour), bitsOf(c.dom), bitsOf(c.month), bitsOf(c.dow)}
		want := [][]int{tc.minute, tc.hour, tc.dom, tc.month, tc.dow}
		for i := range got {
			if !eqInts(got[i], want[i]) {
				t.Errorf("%q: %s = %v, want %v", tc.line, cronFields[i].name, got[i], want[i])
			}
		}
		if c.domStar != tc.domStar || c.dowStar != tc.dowStar {
			t.Errorf("%q: stars %v %v, want %v %v", tc.line, c.domStar, c.dowStar, tc.domStar, tc.dowStar)
		}
		if s.String() != tc.text {
			t.Errorf("%q: String() = %q, want %q", tc.line, s.String(), tc.text)
		}
	}
}

func TestParseCronInvalid(t *testing.T) {
	for _, tc := range []struct{ line, err string }{
		{"", `cron: 0 fields, want 5`},
		{"   ", `cron: 0 fields, want 5`},
		{"* * * *", `cron: 4 fields, want 5`},
		{"* * * * * *", `cron: 6 fields, want 5`},
		{"60 * * * *", `cron: minute "60": 60 is out of range 0-59`},
		{"* 24 * * *", `cron: hour "24": 24 is out of range 0-23`},
		{"* * 0 * *", `cron: day of month "0": 0 is out of range 1-31`},
		{"* * 32 * *", `cron: day of month "32": 32 is out of range 1-31`},
		{"* * * 13 *", `cron: month "13": 13 is out of range 1-12`},
		{"* * * 0 *", `cron: month "0": 0 is out of range 1-12`},
		{"* * * * 8", `cron: day of week "8": 8 is out of range 0-7`},
		{"* * * JAN *", `cron: month "JAN": "JAN" is not a number`},
		{"* * * * MON", `cron: day of week "MON": "MON" is not a number`},
		{"-1 * * * *", `cron: minute "-1": "" is not a number`},
		{"+1 * * * *", `cron: minute "+1": "+1" is not a number`},
		{"5-1 * * * *", `cron: minute "5-1": range 5-1 runs backwards`},
		{"1-2-3 * * * *", `cron: minute "1-2-3": "2-3" is not a number`},
		{"*/0 * * * *", `cron: minute "*/0": step "0" is not a number from 1 to 59`},
		{"*/60 * * * *", `cron: minute "*/60": step "60" is not a number from 1 to 59`},
		{"*/ * * * *", `cron: minute "*/": step "" is not a number from 1 to 59`},
		{"*/+5 * * * *", `cron: minute "*/+5": step "+5" is not a number from 1 to 59`},
		{"5/10 * * * *", `cron: minute "5/10": a step needs a range or *, as in */10 or 5-59/10`},
		{"1,,2 * * * *", `cron: minute "1,,2": an empty item`},
		{"1, * * * *", `cron: minute "1,": an empty item`},
		{"? * * * *", `cron: minute "?": "?" is not a number`},
		{"* * L * *", `cron: day of month "L": "L" is not a number`},
		{"* * * * 1#2", `cron: day of week "1#2": "1#2" is not a number`},
		{"0 0 30 2 *", `cron: no month selected has any of the days of month selected`},
		{"0 0 31 4,6,9,11 *", `cron: no month selected has any of the days of month selected`},
		{"@reboot", `cron: @reboot is not supported`},
		{"@every 5m", `cron: @every is not supported`},
		{"@fortnightly", `cron: unknown macro "@fortnightly"`},
		{"@daily extra", `cron: unknown macro "@daily extra"`},
		{"0 7 * * *\n", `cron: day of week "*\n"`}, // a newline is not a separator
		{"0\u00a07 * * *", `cron: 4 fields`},
		{strings.Repeat("1,", 200) + "1 * * * *", `cron: longer than 256 bytes`},
	} {
		_, err := ParseCronIn(tc.line, time.UTC)
		if err == nil {
			t.Errorf("%q: accepted", tc.line)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.err) && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %q, want it to contain %q", tc.line, err, tc.err)
		}
	}
	if _, err := ParseCronIn("* * * * *", nil); err == nil {
		t.Error("a nil zone was accepted")
	}
}

func TestCronNextTable(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct{ line, after, want string }{
		{"* * * * *", "2026-03-02 10:00:00", "2026-03-02 10:01:00"},
		{"* * * * *", "2026-03-02 10:00:59", "2026-03-02 10:01:00"},
		{"0 7 * * *", "2026-03-02 07:00:00", "2026-03-03 07:00:00"},
		{"0 7 * * *", "2026-03-02 06:59:59", "2026-03-02 07:00:00"},
		{"59 23 31 12 *", "2026-03-02 00:00:00", "2026-12-31 23:59:00"},
		// Both day fields restricted: either matches (the 1st, or a Monday).
		{"0 9 1 * 1", "2026-03-02 10:00:00", "2026-03-09 09:00:00"},
		{"0 9 1 * 1", "2026-03-30 10:00:00", "2026-04-01 09:00:00"},
		// Day of week starts with *: both must match (odd days that are Mondays).
		{"0 9 */2 * 1", "2026-03-02 10:00:00", "2026-03-09 09:00:00"},
		{"0 9 */2 * 1", "2026-03-09 10:00:00", "2026-03-23 09:00:00"},
		{"0 0 * * 7", "2026-03-02 00:00:00", "2026-03-08 00:00:00"},
		{"0 0 29 2 *", "2026-03-02 00:00:00", "2028-02-29 00:00:00"},
		// Feb 29 on a Sunday (both restricted would be OR; */1 keeps AND).
		{"0 0 29 2 */7", "2026-01-01 00:00:00", "2032-02-29 00:00:00"},
		{"@monthly", "2026-12-15 00:00:00", "2027-01-01 00:00:00"},
	} {
		s, err := ParseCronIn(tc.line, time.UTC)
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if got := s.Next(at(tc.after)); !got.Equal(at(tc.want)) {
			t.Errorf("%q after %s: %s, want %s", tc.line, tc.after, got, tc.want)
		}
	}
}

func TestEvery(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		d           time.Duration
		after, want string
	}{
		{15 * time.Minute, "2026-03-02T10:07:00Z", "2026-03-02T10:15:00Z"},
		{15 * time.Minute, "2026-03-02T10:15:00Z", "2026-03-02T10:30:00Z"},
		{15 * time.Minute, "2026-03-02T10:14:59.999999999Z", "2026-03-02T10:15:00Z"},
		{6 * time.Hour, "2026-03-02T10:07:00Z", "2026-03-02T12:00:00Z"},
		// The grid is absolute: in +01:00, 6h is due at 01:00, 07:00, ...
		{6 * time.Hour, "2026-03-02T10:07:00+01:00", "2026-03-02T13:00:00+01:00"},
		{90*time.Second + 500*time.Millisecond, "1970-01-01T00:00:00Z", "1970-01-01T00:01:30.5Z"},
		{time.Hour, "1969-12-31T23:30:00Z", "1970-01-01T00:00:00Z"},
	} {
		got := Every(tc.d).Next(at(tc.after))
		if !got.Equal(at(tc.want)) {
			t.Errorf("every %s after %s: %s, want %s", tc.d, tc.after, got, tc.want)
		}
	}
	for d, want := range map[time.Duration]string{15 * time.Minute: "every 15m", 24 * time.Hour: "every 24h", 90 * time.Minute: "every 1h30m",
		90 * time.Second: "every 1m30s"} {
		if got := Every(d).String(); got != want {
			t.Errorf("Every(%s).String() = %q, want %q", d, got, want)
		}
	}
	if got := Every(15 * time.Minute).String(); got != "every 15m" {
		t.Errorf("String() = %q", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Every(0) did not panic")
			}
		}()
		Every(0)
	}()
}

// BenchmarkCronNext: a frequent line, a daily one in a DST zone, and the
// slowest kind (a leap day on one weekday, years apart).
func BenchmarkCronNext(b *testing.B) {
	berlin := mustZone(b, "Europe/Berlin")
	after := time.Date(2026, 3, 2, 10, 7, 0, 0, time.UTC)
	for _, line := range []string{"*/15 * * * *", "30 2 * * *", "0 0 29 2 */7"} {
		s, err := ParseCronIn(line, berlin)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(line, func(b *testing.B) {
			for b.Loop() {
				s.Next(after)
			}
		})
	}
}
