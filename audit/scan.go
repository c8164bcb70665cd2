package audit

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"boxmaker/wire"
)

// The scanning primitives of the fast line parser (parse.go). Each takes the
// line and an offset and returns the offset after what it read, or -1. They
// accept only the canonical encoding wire.Marshal writes: no whitespace,
// integers without sign, fraction or leading zero, strings with exactly the
// escapes jsontext writes (\" \\ \b \f \n \r \t, other control characters as
// \u00xx in lowercase) and valid UTF-8 everywhere else.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// lit reads the literal s.
func lit(b []byte, i int, s string) int {
	if i < 0 || len(b)-i < len(s) || string(b[i:i+len(s)]) != s {
		return -1
	}
	return i + len(s)
}

// num reads an unsigned decimal integer that fits in a uint64.
func num(b []byte, i int) (uint64, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	switch n := j - i; {
	case n == 0, n > 1 && b[i] == '0': // a leading zero is not JSON
		return 0, -1
	case n > 20:
		return 0, -1
	case n == 20:
		// Only here can the value overflow.
		if string(b[i:j]) > "18446744073709551615" {
			return 0, -1
		}
	}
	var v uint64
	for _, c := range b[i:j] {
		v = v*10 + uint64(c-'0')
	}
	return v, j
}

// str reads a string and returns the offsets of its contents (between the
// quotes) and whether they hold an escape.
func str(b []byte, i int) (start, end int, esc bool, next int) {
	if i < 0 || i >= len(b) || b[i] != '"' {
		return 0, 0, false, -1
	}
	i++
	start = i
	for {
		// Skip plain ASCII eight bytes at a time, the usual case by far, to
		// the first byte that needs a look.
		for len(b)-i >= 8 {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return 0, 0, false, -1
		}
		switch c := b[i]; {
		case c == '"':
			return start, i, esc, i + 1
		case c == '\\':
			n := escape(b, i)
			if n < 0 {
				return 0, 0, false, -1
			}
			esc = true
			i = n
		case c < 0x20:
			return 0, 0, false, -1
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, 0, false, -1
			}
			i += n
		}
	}
}

// special has a high bit set for every byte of x that is a control
// character, '"', '\\' or not ASCII. Bits above the lowest may be false
// (a borrow carries into the next byte), but the lowest is always true, so
// it marks the first such byte.
func special(x uint64) uint64 {
	ctl := (x - 0x20*ones) &^ x
	quote := x ^ '"'*ones
	quote = (quote - ones) &^ quote
	bslash := x ^ '\\'*ones
	bslash = (bslash - ones) &^ bslash
	return (ctl | quote | bslash | x) & highs
}

// escape reads one escape sequence at b[i] == '\\', accepting only the form
// jsontext writes for the character.
func escape(b []byte, i int) int {
	if i+1 >= len(b) {
		return -1
	}
	switch b[i+1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return i + 2
	case 'u':
		// Only control characters without a short form are written as \u00xx.
		if i+6 > len(b) || b[i+2] != '0' || b[i+3] != '0' {
			return -1
		}
		hi, lo := b[i+4], b[i+5]
		if hi != '0' && hi != '1' || !isLowerHex(lo) {
			return -1
		}
		switch c := hexVal(hi)<<4 | hexVal(lo); c {
		case '\b', '\f', '\n', '\r', '\t':
			return -1
		}
		return i + 6
	}
	return -1
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// hash reads a string of exactly 64 lowercase hex characters and returns the
// offset of the first.
func hash(b []byte, i int) (start, next int) {
	if i < 0 || len(b)-i < 66 || b[i] != '"' || b[i+65] != '"' {
		return 0, -1
	}
	for k := i + 1; k < i+65; k += 8 {
		if !hexWord(binary.LittleEndian.Uint64(b[k:])) {
			return 0, -1
		}
	}
	return i + 1, i + 66
}

// hashInto reads a string of exactly 64 lowercase hex characters into h,
// checking and decoding in one pass, eight characters at a time.
func hashInto(b []byte, i int, h *wire.Hash32) int {
	if i < 0 || len(b)-i < 66 || b[i] != '"' || b[i+65] != '"' {
		return -1
	}
	s := b[i+1 : i+65]
	for k := 0; k < 8; k++ {
		x := binary.LittleEndian.Uint64(s[8*k:])
		if !hexWord(x) {
			return -1
		}
		// '0'-'9' are 0x30-0x39 and 'a'-'f' 0x61-0x66: the low nibble, plus
		// nine when bit 6 is set, is the digit's value.
		v := x&(0x0f*ones) + 9*(x>>6&ones)
		// Pair the digits (first is high) into the low byte of each 16-bit
		// lane, then pack the four lanes' bytes together.
		v = (v&0x00ff00ff00ff00ff)<<4 | v>>8&0x00ff00ff00ff00ff
		v = (v | v>>8) & 0x0000ffff0000ffff
		v = (v | v>>16) & 0xffffffff
		binary.LittleEndian.PutUint32(h[4*k:], uint32(v))
	}
	return i + 66
}

// hexWord reports whether all eight bytes of x are in 0-9 or a-f.
func hexWord(x uint64) bool {
	// With every byte below 0x80, adding 0x80-n sets a byte's high bit
	// exactly when the byte is at least n, and never carries into the next.
	const (
		atLeast0, above9 = (0x80 - '0') * ones, (0x80 - '9' - 1) * ones
		atLeastA, aboveF = (0x80 - 'a') * ones, (0x80 - 'f' - 1) * ones
	)
	digit := (x + atLeast0) &^ (x + above9)
	lower := (x + atLeastA) &^ (x + aboveF)
	return x&highs == 0 && (digit|lower)&highs == highs
}

// quoted reads a string whose contents need no escaping and returns them,
// unchecked: callers compare them with names or check their characters,
// and a backslash can be in neither. (An escaped quote ends the contents
// early, which then match nothing, or leave a stray quote behind.)
func quoted(b []byte, i int) ([]byte, int) {
	if i < 0 || i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	// A plain loop: these strings are a few bytes long, shorter than it
	// takes bytes.IndexByte to pay for its call.
	for j := i + 1; j < len(b); j++ {
		if b[j] == '"' {
			return b[i+1 : j], j + 1
		}
	}
	return nil, -1
}

// enum reads one of names and returns its index.
func enum(b []byte, i int, names []string) (int, int) {
	s, j := quoted(b, i)
	if j < 0 {
		return 0, -1
	}
	for k, n := range names {
		if string(s) == n {
			return k, j
		}
	}
	return 0, -1
}

// boolean reads true or false.
func boolean(b []byte, i int) (bool, int) {
	if j := lit(b, i, "true"); j >= 0 {
		return true, j
	}
	return false, lit(b, i, "false")
}

// null reports whether b[i:] starts with null and returns the offset after it.
func null(b []byte, i int) (bool, int) {
	if j := lit(b, i, "null"); j >= 0 {
		return true, j
	}
	return false, i
}
