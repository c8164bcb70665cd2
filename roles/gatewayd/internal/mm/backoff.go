package mm

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with equal jitter: the n-th wait
// (n from 0) is d/2 plus a random part of d/2, where d = min(Cap, Base·2ⁿ).
//
// Equal jitter rather than full jitter (a random part of all of d): full
// jitter spreads a crowd of clients a little better, but any one wait can
// be near zero, so a client of a server that stays down can retry in a
// tight loop by bad luck. With equal jitter every wait is at least half its
// window, so the waits grow until the cap whatever the random numbers are,
// and clients that lost their server together still spread over half a
// window when it comes back. gatewayd is one client; a tight loop against
// the owner's server is the worse failure.
type Backoff struct {
	Base time.Duration // the first window (default 1 s)
	Cap  time.Duration // the largest window (default 1 min)
	// Rand returns a number in [0, 1) (default math/rand/v2's Float64).
	// Values outside it are clamped.
	Rand func() float64
}

// Next returns the wait before retry attempt (0 for the first retry).
// It is never above Cap, and never below half of min(Cap, Base·2^attempt).
func (b Backoff) Next(attempt int) time.Duration {
	base, limit := b.Base, b.Cap
	if base <= 0 {
		base = time.Second
	}
	if limit <= 0 {
		limit = time.Minute
	}
	if base > limit {
		base = limit
	}
	d := base
	for i := 0; i < attempt && d < limit; i++ {
		if d > limit/2 {
			d = limit
			break
		}
		d *= 2
	}
	d = min(d, limit)
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	f := r()
	if math.IsNaN(f) || f < 0 {
		f = 0
	}
	f = min(f, 1)
	half := d / 2
	return half + time.Duration(f*float64(d-half))
}
