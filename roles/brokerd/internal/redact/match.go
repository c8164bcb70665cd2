package redact

import (
	"bytes"
	"encoding/binary"
)

// keep is 0 for the whitespace an encoder or a terminal puts between
// characters (space, tab, CR, LF) and 1 for every other byte; lower lowers
// ASCII letters and leaves every other byte as it is.
var keep, lower = func() (k [256]int, l [256]byte) {
	for c := range 256 {
		k[c], l[c] = 1, byte(c)
		if c >= 'A' && c <= 'Z' {
			l[c] = byte(c) + 'a' - 'A'
		}
	}
	for _, c := range []byte(" \t\r\n") {
		k[c] = 0
	}
	return k, l
}()

// strip writes t without its whitespace into s (at least as long as t) and
// returns how much it wrote. marks (len(t)/32+1 long) gets, for each 32
// bytes of t, how many bytes were kept before them, so that a position in
// s can be traced back to t without another walk (rawPositions). Blocks of
// 32 bytes without a byte below '!' (base64 and hex lines, long words) are
// copied whole; the rest byte by byte, without a branch per byte: every
// byte is written, and only a kept one moves the end on.
func strip(t, s []byte, marks []int) int {
	n, i := 0, 0
	for ; i+32 <= len(t); i += 32 {
		marks[i/32] = n
		b := (*[32]byte)(t[i : i+32])
		d := (*[32]byte)(s[n : n+32]) // n <= i
		if !hasLow(b[:]) {
			*d = *b
			n += 32
			continue
		}
		k := 0
		for _, c := range b {
			d[k&31] = c // k < 32 here; the mask spares a bounds check
			k += keep[c]
		}
		n += k
	}
	marks[i/32] = n
	for _, c := range t[i:] {
		s[n] = c
		n += keep[c]
	}
	return n
}

// low8 has a top bit set in some byte exactly when one of w's bytes is
// below '!' (which whitespace is).
func low8(w uint64) uint64 { return (w - 0x2121212121212121) &^ w & 0x8080808080808080 }

// hasLow reports whether the 32 bytes of b hold a byte below '!'.
func hasLow(b []byte) bool {
	b = b[:32]
	return low8(binary.LittleEndian.Uint64(b))|low8(binary.LittleEndian.Uint64(b[8:]))|
		low8(binary.LittleEndian.Uint64(b[16:]))|low8(binary.LittleEndian.Uint64(b[24:])) != 0
}

// rarity ranks bytes by how seldom they start a match in tool output
// (logs, prose, paths, numbers), lower is rarer: bytes.Index skips ahead
// with a vector search for its pattern's first byte, so a rare first byte
// makes the search several times faster. A guess, not a measurement of any
// one text; any choice is correct, only the speed differs.
var rarity = func() (r [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'a' && c <= 'z':
			r[c] = 6
		case c >= '0' && c <= '9':
			r[c] = 5
		case c >= 'A' && c <= 'Z':
			r[c] = 3
		case c < 0x80:
			r[c] = 4
		default:
			r[c] = 2
		}
	}
	for _, c := range []byte("-_/.,:=") {
		r[c] = 5
	}
	for _, c := range []byte("jkqvxz+") {
		r[c] = 4
	}
	for _, c := range []byte("JKQVXZ%~@") {
		r[c] = 2
	}
	return r
}()

// anchorMax is the most of a pattern bytes.Index looks for: up to 63
// bytes it uses vector instructions, beyond it falls back to Rabin-Karp,
// several times slower. KMP checks the rest.
const anchorMax = 32

// matcher finds every occurrence of pat, overlapping ones included, in
// time linear in the text: bytes.Index skips to the next place an anchor
// (a piece of pat) occurs, and from where pat would start, Knuth-Morris-
// Pratt reads byte by byte until no occurrence can be in progress; then
// bytes.Index takes over again.
type matcher struct {
	pat  []byte
	fail []int // fail[q]: the longest proper border of pat[:q+1]
	// fold: pat is in lower case and the text is compared lowered. The
	// anchor then has no letter, so that bytes.Index needs no folding.
	fold   bool
	at     int // where the anchor starts in pat
	anchor []byte
}

// newMatcher returns a matcher for pat, or ok false when pat is to be
// folded and has no piece without letters long enough to anchor on.
func newMatcher(pat []byte, fold bool) (m matcher, ok bool) {
	fail := make([]int, len(pat))
	for q, k := 1, 0; q < len(pat); q++ {
		for k > 0 && pat[q] != pat[k] {
			k = fail[k-1]
		}
		if pat[q] == pat[k] {
			k++
		}
		fail[q] = k
	}
	m = matcher{pat: pat, fail: fail, fold: fold, at: -1}
	// The anchor: at least this long, so that it seldom occurs by chance.
	want := min(len(pat), 12)
	if fold {
		want = min(len(pat), minForm)
	}
	best := 0
	for d := range pat {
		e := min(len(pat), d+anchorMax)
		if fold {
			for k := d; k < e; k++ {
				if pat[k] >= 'a' && pat[k] <= 'z' || pat[k] >= 'A' && pat[k] <= 'Z' {
					e = k
				}
			}
		}
		if e-d < want {
			continue
		}
		score := 16 * int(rarity[pat[d]])
		if e-d > 1 {
			score += int(rarity[pat[d+1]])
		}
		if m.at < 0 || score < best {
			m.at, m.anchor, best = d, pat[d:e], score
		}
	}
	return m, m.at >= 0
}

// step is KMP's move on one byte of text from state q (how much of pat
// is matched): the new state, and whether an occurrence just ended, in
// which case the state is already the border it goes on from.
func (m *matcher) step(q int, c byte) (int, bool) {
	if m.fold {
		c = lower[c]
	}
	for q > 0 && m.pat[q] != c {
		q = m.fail[q-1]
	}
	if m.pat[q] == c {
		q++
	}
	if q == len(m.pat) {
		return m.fail[q-1], true
	}
	return q, false
}

// each calls fn with the start of every occurrence of m.pat in t, in order.
func (m *matcher) each(t []byte, fn func(start int)) {
	n := len(m.pat)
	for i := 0; i+n <= len(t); {
		k := bytes.Index(t[i+m.at:], m.anchor)
		if k < 0 {
			return
		}
		// KMP from where pat would start: no occurrence starts earlier,
		// or its anchor would have been found first. KMP stops only when
		// no occurrence is in progress, and each Index call reads text no
		// earlier step has read but for at most the anchor's length: the
		// whole is linear.
		j, q := i+k, 0
		for j < len(t) {
			var found bool
			q, found = m.step(q, t[j])
			j++
			if found {
				fn(j - n)
			}
			if q == 0 {
				break
			}
		}
		i = j
	}
}
