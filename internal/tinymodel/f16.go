package tinymodel

import "math"

// f16bits converts a float32 to IEEE 754 half precision, rounding to
// nearest even as numpy's astype(float16) does; too large becomes infinity,
// too small a subnormal or zero, NaN stays NaN.
func f16bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // infinity or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp > 127+15: // beyond the largest half exponent
		return sign | 0x7c00
	case exp >= 127-14: // a normal half
		h := uint32(exp-127+15)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++ // may carry into the exponent, up to infinity: still right
		}
		return sign | uint16(h)
	case exp >= 127-25: // a subnormal half (or rounds up to the smallest normal)
		m := mant | 0x800000 // the implicit bit
		shift := uint32(127 - 14 - exp + 13)
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign
}

// f16float converts half precision bits back to float32 (for tests and
// for reading a model back).
func f16float(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		v := float32(mant) / (1 << 24) // subnormal: mant * 2^-24
		if sign != 0 {
			v = -v
		}
		return v
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}
