package jobs

import "time"

// Clock is the scheduler's source of time, so tests can drive it.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; false if it already fired or
	// was stopped.
	Stop() bool
}

// RealClock is the system clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
