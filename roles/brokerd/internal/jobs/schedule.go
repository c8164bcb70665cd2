package jobs

import (
	"fmt"
	"strings"
	"time"
)

// Schedule says when a job is due.
type Schedule interface {
	// Next is the first due time strictly after after.
	Next(after time.Time) time.Time
	// String is the schedule as the owner would write it.
	String() string
}

// MinEvery and MaxEvery bound an `every` interval. Below a minute a job
// would be a busy loop of sessions; above a year it is a cron line.
const (
	MinEvery = time.Minute
	MaxEvery = 366 * 24 * time.Hour
)

// every is a fixed interval on a grid anchored at the Unix epoch.
type every time.Duration

// Every is a schedule due at every multiple of d since the Unix epoch
// (1970-01-01T00:00:00Z): "15m" is due at :00, :15, :30 and :45 of every
// hour, "6h" at 00:00, 06:00, 12:00 and 18:00 UTC. Anchoring the grid at a
// fixed instant, not at the start of brokerd, keeps due times the same
// across restarts, so a restart neither runs a job early nor moves its
// slots. The grid is absolute time, so a clock change (DST) does not move
// it. d must be positive; Load only accepts MinEvery to MaxEvery.
func Every(d time.Duration) Schedule {
	if d <= 0 {
		panic(fmt.Sprintf("jobs: Every(%s): the interval must be positive", d))
	}
	return every(d)
}

func (e every) Next(after time.Time) time.Time {
	d := int64(e)
	sec, nsec := after.Unix(), int64(after.Nanosecond())
	// after as whole intervals since the epoch, without overflowing int64
	// nanoseconds for far dates: split into seconds and nanoseconds.
	var k int64
	if d%int64(time.Second) == 0 {
		ds := d / int64(time.Second)
		k = floorDiv(sec, ds) + 1
		return time.Unix(k*ds, 0).In(after.Location())
	}
	n := sec*int64(time.Second) + nsec
	k = floorDiv(n, d) + 1
	return time.Unix(0, k*d).In(after.Location())
}

// String is "every 15m", "every 24h", "every 1h30m": the duration without
// its zero minutes and seconds, as an owner writes it.
func (e every) String() string {
	s := time.Duration(e).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return "every " + s
}

// floorDiv is a/b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
