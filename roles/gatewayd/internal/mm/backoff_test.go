package mm

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func fixed(f float64) func() float64 { return func() float64 { return f } }

func TestBackoffTable(t *testing.T) {
	b := Backoff{Base: time.Second, Cap: 30 * time.Second}
	for _, tc := range []struct {
		attempt int
		r       float64
		want    time.Duration
	}{
		{0, 0, 500 * time.Millisecond},
		{0, 0.5, 750 * time.Millisecond},
		{0, 1, time.Second},
		{1, 0, time.Second},
		{2, 0, 2 * time.Second},
		{3, 0.5, 6 * time.Second},
		{4, 0, 8 * time.Second},
		{5, 0, 15 * time.Second}, // 32 s capped at 30 s
		{5, 0.999999, 30*time.Second - 15*time.Microsecond},
		{6, 0, 15 * time.Second},
		{1 << 30, 0.5, 22500 * time.Millisecond},
		{-1, 0, 500 * time.Millisecond},
		{0, math.NaN(), 500 * time.Millisecond},
		{0, -3, 500 * time.Millisecond},
		{0, 7, time.Second},
	} {
		b.Rand = fixed(tc.r)
		if got := b.Next(tc.attempt); got != tc.want {
			t.Errorf("Next(%d) with rand %v = %v, want %v", tc.attempt, tc.r, got, tc.want)
		}
	}
	var zero Backoff
	zero.Rand = fixed(0)
	if got := zero.Next(0); got != 500*time.Millisecond {
		t.Errorf("the zero Backoff's first wait: %v, want half of the 1 s default", got)
	}
	if got := zero.Next(100); got != 30*time.Second {
		t.Errorf("the zero Backoff's cap: %v, want half of the 1 min default", got)
	}
}

// TestBackoffProperty checks Next against a naive oracle in floating
// point over random bases, caps, attempts and random numbers: never above
// Cap, and equal to d/2 + r·d/2 for d = min(Cap, Base·2^attempt); and with
// any random numbers the waits' lower bound doubles until Cap.
func TestBackoffProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		base := time.Duration(1 + rng.Int64N(int64(10*time.Second)))
		limit := base + time.Duration(rng.Int64N(int64(10*time.Minute)))
		attempt := rng.IntN(80)
		r := rng.Float64()
		b := Backoff{Base: base, Cap: limit, Rand: fixed(r)}
		got := b.Next(attempt)
		d := math.Min(float64(limit), float64(base)*math.Pow(2, float64(attempt)))
		want := d/2 + r*(d-d/2)
		if got > limit || got < 0 {
			t.Fatalf("Base %v Cap %v: Next(%d) = %v, above Cap", base, limit, attempt, got)
		}
		if math.Abs(float64(got)-want) > 2 {
			t.Fatalf("Base %v Cap %v r %v: Next(%d) = %v, the oracle says %v", base, limit, r, attempt, got, time.Duration(want))
		}
	}
	// Growth: the smallest possible wait doubles until half of Cap.
	b := Backoff{Base: 100 * time.Millisecond, Cap: 10 * time.Second, Rand: fixed(0)}
	prev := time.Duration(0)
	for a := 0; a < 20; a++ {
		got := b.Next(a)
		switch {
		case got < prev:
			t.Fatalf("Next(%d) = %v, below Next(%d) = %v", a, got, a-1, prev)
		case got < b.Cap/2 && prev > 0 && got != 2*prev:
			t.Fatalf("Next(%d) = %v, not double %v before the cap", a, got, prev)
		}
		prev = got
	}
	if prev != b.Cap/2 {
		t.Errorf("the lower bound settled at %v, want half the cap", prev)
	}
}
