package tinymodel

import (
	"math"
	"testing"
)

func TestF16Bits(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00}, {-2, 0xc000}, {5, 0x4500}, {20, 0x4d00}, {0.1, 0x2e66},
		{65504, 0x7bff}, {65520, 0x7c00}, {1e9, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{1 + 1.0/2048, 0x3c00}, // a tie rounds to even (down)
		{1 + 3.0/2048, 0x3c02}, // a tie rounds to even (up)
		{1.0 / (1 << 24), 0x0001},
		{1.0 / (1 << 25), 0},                // half the smallest subnormal: a tie, to even (0)
		{1.5 / (1 << 25), 0x0001},           // above the tie
		{1.0 / (1 << 14), 0x0400},           // the smallest normal
		{1.0/(1<<14) - 1.0/(1<<25), 0x0400}, // a subnormal that rounds up to it
		{float32(math.NaN()), 0x7e00},
	} {
		if got := f16bits(c.f); got != c.want {
			t.Errorf("f16bits(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// Every half that is a number converts to float32 and back unchanged.
func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := f16float(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := f16bits(f); back != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, back)
		}
	}
}
