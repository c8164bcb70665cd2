package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The cron dialect (docs/decisions.md, "Jobs: files, schedules and the
// scheduler"): five fields, "minute hour day-of-month month day-of-week",
// separated by spaces or tabs. A field is a list of items separated by
// commas; an item is "*", "*/n", a number "a", a range "a-b" or "a-b/n".
// Day of week is 0 to 7, 0 and 7 both Sunday. Names (JAN, MON), "?", "L",
// "W", "#" and a bare "a/n" are refused, so that nothing is read in a way
// the owner did not mean. Of the @-macros only the plain aliases are
// accepted (@yearly, @annually, @monthly, @weekly, @daily, @midnight,
// @hourly): each is exactly one five-field line. @reboot and @every are
// refused: a job that runs at start is a catch-up, and an interval is
// `every`.
//
// Day of month and day of week follow Vixie cron and cronie: if either field
// starts with "*", a day must match both (the "*" one matches every day);
// if neither does, a day matching either one matches. So "0 9 1 * 1" is the
// 1st of the month and every Monday, and "0 9 */2 * 1" is odd days that are
// Mondays, as the owner's crontab would read them.

// maxCronLen bounds a cron line: the longest sensible one is a few dozen
// bytes, and the bound keeps a pasted blob from being parsed item by item.
const maxCronLen = 256

// cronField is one field's range and name, for parsing and for errors.
type cronField struct {
	name     string
	min, max int
}

var cronFields = [5]cronField{
	{"minute", 0, 59},
	{"hour", 0, 23},
	{"day of month", 1, 31},
	{"month", 1, 12},
	{"day of week", 0, 7},
}

var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// cron is a parsed cron line: one bit per allowed value of each field (day
// of week 7 folded into 0), whether day of month and day of week started
// with "*", the zone its times are read in, and the text it was parsed from
// (normalised to single spaces) for String.
type cron struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
	loc                           *time.Location
	text                          string
}

// ParseCron parses a cron line whose times are local time (time.Local), as
// the owner's crontab would be.
func ParseCron(s string) (Schedule, error) { return ParseCronIn(s, time.Local) }

// ParseCronIn parses a cron line whose times are wall-clock times in loc.
func ParseCronIn(s string, loc *time.Location) (Schedule, error) {
	c, err := parseCron(s)
	if err != nil {
		return nil, err
	}
	if loc == nil {
		return nil, errors.New("cron: no time zone")
	}
	c.loc = loc
	// A line can pick only days on which a daylight saving change skips
	// every time it names ("30 2 25-31 3 */7" in Europe/Berlin is 02:30 on
	// the last Sunday of March, the night 02:00 jumps to 03:00). Next
	// searches a whole Gregorian cycle, after which days, weekdays and the
	// zone's rules for the future repeat, so a line with no next time there
	// never runs: it is refused here rather than loaded as a job that is
	// never due.
	if c.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("cron: %q never runs in %s: every time it names falls in a daylight saving gap there", c.text, loc)
	}
	return c, nil
}

func parseCron(s string) (*cron, error) {
	if len(s) > maxCronLen {
		return nil, fmt.Errorf("cron: longer than %d bytes", maxCronLen)
	}
	text := strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' }), " ")
	line := text
	if strings.HasPrefix(line, "@") {
		m, ok := cronMacros[line]
		switch {
		case line == "@reboot":
			return nil, errors.New(`cron: @reboot is not supported (a run missed while the host was down is catch_up = true)`)
		case strings.HasPrefix(line, "@every"):
			return nil, errors.New(`cron: @every is not supported (write every = "15m" instead of schedule)`)
		case !ok:
			return nil, fmt.Errorf("cron: unknown macro %q (supported: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)", line)
		}
		line = m
	}
	fields := strings.Split(line, " ")
	if len(fields) != 5 || line == "" {
		n := len(fields)
		if line == "" {
			n = 0
		}
		return nil, fmt.Errorf(`cron: %d fields, want 5: "minute hour day-of-month month day-of-week"`, n)
	}
	c := &cron{text: text}
	sets := [5]*uint64{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, f := range fields {
		bits, err := parseCronField(f, cronFields[i])
		if err != nil {
			return nil, err
		}
		*sets[i] = bits
	}
	if c.dow&(1<<7) != 0 {
		c.dow = c.dow&^(1<<7) | 1
	}
	c.domStar, c.dowStar = fields[2][0] == '*', fields[4][0] == '*'
	if err := c.checkReachable(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseCronField parses one field into a bit set over f's range.
func parseCronField(s string, f cronField) (uint64, error) {
	var bits uint64
	for item := range strings.SplitSeq(s, ",") {
		b, err := parseCronItem(item, f)
		if err != nil {
			return 0, fmt.Errorf("cron: %s %q: %w", f.name, s, err)
		}
		bits |= b
	}
	return bits, nil
}

func parseCronItem(item string, f cronField) (uint64, error) {
	rng, stepText, hasStep := strings.Cut(item, "/")
	lo, hi := f.min, f.max
	switch {
	case item == "":
		return 0, errors.New("an empty item")
	case rng == "*":
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if lo, err = cronNumber(a, f); err != nil {
			return 0, err
		}
		if hi, err = cronNumber(b, f); err != nil {
			return 0, err
		}
		if lo > hi {
			return 0, fmt.Errorf("range %d-%d runs backwards", lo, hi)
		}
	default:
		if hasStep {
			return 0, fmt.Errorf("a step needs a range or *, as in */%s or %s-%d/%s", stepText, rng, f.max, stepText)
		}
		n, err := cronNumber(rng, f)
		if err != nil {
			return 0, err
		}
		lo, hi = n, n
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || !allDigits(stepText) || n < 1 || n > f.max {
			return 0, fmt.Errorf("step %q is not a number from 1 to %d", stepText, f.max)
		}
		step = n
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, nil
}

// cronNumber reads a decimal number within f's range; signs, spaces and
// names are refused.
func cronNumber(s string, f cronField) (int, error) {
	if s == "" || !allDigits(s) {
		return 0, fmt.Errorf("%q is not a number (only digits, *, ',', '-' and '/' are understood)", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		return 0, fmt.Errorf("%s is out of range %d-%d", s, f.min, f.max)
	}
	return n, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// daysIn is the most days month m (1-12) can have: February counts its 29th.
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// checkReachable refuses a line that can never match, such as "0 0 30 2 *",
// so that Next always has an answer. Only day of month against month can
// exclude everything: a day of week matches some day of every month.
func (c *cron) checkReachable() error {
	if !c.domStar && !c.dowStar || c.domStar {
		return nil
	}
	for m := 1; m <= 12; m++ {
		if c.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= daysIn[m]; d++ {
			if c.dom&(1<<d) != 0 {
				return nil
			}
		}
	}
	return errors.New("cron: no month selected has any of the days of month selected; the schedule would never run")
}

func (c *cron) String() string { return c.text }

// dayMatches applies the day-of-month and day-of-week rule to one date.
func (c *cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<t.Day()) != 0
	dow := c.dow&(1<<int(t.Weekday())) != 0
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}
