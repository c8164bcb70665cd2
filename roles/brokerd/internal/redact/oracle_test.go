package redact_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The naive oracle: the forms worked out by brute force rather than by the
// alignment arithmetic, a matcher that tries every start and skips
// whitespace by hand, and replacement repeated until nothing is found.
// Slow (text times form length per form), and built without the package's
// code.

// oracleForm is one form; fold says it matches in any case.
type oracleForm struct {
	s     string
	fold  bool
	exact bool // the value itself: no whitespace inside
}

const oracleMin = 4

// oracleForms derives every form of v from encodings of v between
// neighbours: a character belongs to v's run when it is the same whatever
// the neighbour bytes are.
func oracleForms(v []byte) []oracleForm {
	if len(v) == 0 {
		return nil
	}
	fs := []oracleForm{{s: string(v), exact: true}}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for a := range 3 {
			var variants []string
			for _, p := range []byte{0x00, 0xff} {
				for _, q := range []byte{0x00, 0xff} {
					s := append(bytes.Repeat([]byte{p}, a), v...)
					s = append(s, q, q, q)
					variants = append(variants, enc.EncodeToString(s))
				}
			}
			// v's run: the characters all variants agree on, padding aside.
			first, last := -1, -1
			for c := range variants[0] {
				same := variants[0][c] != '='
				for _, x := range variants[1:] {
					same = same && x[c] == variants[0][c]
				}
				if same && first < 0 {
					first = c
				}
				if same {
					if last >= 0 && last != c-1 {
						panic("oracle: v's characters are not one run")
					}
					last = c
				}
			}
			if first < 0 || last-first+1 < oracleMin {
				continue
			}
			fs = append(fs, oracleForm{s: variants[0][first : last+1]})
			// Where v ends the stream: the rest of the encoding, padded
			// and not.
			s := append(make([]byte, a), v...)
			fs = append(fs, oracleForm{s: enc.EncodeToString(s)[first:]},
				oracleForm{s: enc.WithPadding(base64.NoPadding).EncodeToString(s)[first:]})
		}
	}
	if h := fmt.Sprintf("%x", v); len(h) >= oracleMin {
		fs = append(fs, oracleForm{s: h, fold: true})
	}
	var all strings.Builder
	for _, c := range v {
		fmt.Fprintf(&all, "%%%02X", c)
	}
	if all.Len() >= oracleMin {
		fs = append(fs, oracleForm{s: all.String(), fold: true})
	}
	esc := regexp.MustCompile(`%[0-9A-F]{2}`)
	for _, e := range []string{url.QueryEscape(string(v)), url.PathEscape(string(v))} {
		for _, p := range []string{e, esc.ReplaceAllStringFunc(e, strings.ToLower)} {
			if p != string(v) && len(p) >= oracleMin {
				fs = append(fs, oracleForm{s: p})
			}
		}
	}
	return fs
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// oracleMatches returns every occurrence of every form in t as [start, end)
// from its first character to its last.
func oracleMatches(t []byte, fs []oracleForm) [][2]int {
	var out [][2]int
	for _, f := range fs {
		for i := range t {
			j, k := i, 0
			for k < len(f.s) && j < len(t) {
				if k > 0 && !f.exact && isSpace(t[j]) {
					j++
					continue
				}
				a, b := t[j], f.s[k]
				if f.fold {
					a, b = lowerASCII(a), lowerASCII(b)
				}
				if a != b {
					break
				}
				j, k = j+1, k+1
			}
			if k == len(f.s) {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// oracleRedact replaces, until none is left, every occurrence not inside a
// marker, widened over any marker it overlaps and over any UTF-8
// character it cuts, overlapping ones joined. passes says how many passes
// replaced something: past the package's bound it withholds the text.
func oracleRedact(t []byte, name string, fs []oracleForm) (out []byte, passes int) {
	marker := "[secret:" + name + "]"
	for passes = 0; passes < 50; passes++ {
		var ms [][2]int
		for i := 0; i+len(marker) <= len(t); i++ {
			if string(t[i:i+len(marker)]) == marker {
				ms = append(ms, [2]int{i, i + len(marker)})
			}
		}
		units := runeUnits(t)
		var spans [][2]int
		for _, m := range oracleMatches(t, fs) {
			inside := false
			for _, k := range ms {
				if k[0] <= m[0] && m[1] <= k[1] {
					inside = true
				}
			}
			if inside {
				continue
			}
			for _, k := range ms {
				if k[0] < m[1] && m[0] < k[1] {
					m[0], m[1] = min(m[0], k[0]), max(m[1], k[1])
				}
			}
			spans = append(spans, [2]int{units[m[0]][0], units[m[1]-1][1]})
		}
		if len(spans) == 0 {
			return t, passes
		}
		// Sort by start; join those that overlap (touching ones stay two).
		for i := 1; i < len(spans); i++ {
			for j := i; j > 0 && spans[j][0] < spans[j-1][0]; j-- {
				spans[j], spans[j-1] = spans[j-1], spans[j]
			}
		}
		var b []byte
		at := 0
		for i := 0; i < len(spans); {
			s, e := spans[i][0], spans[i][1]
			for i++; i < len(spans) && spans[i][0] < e; i++ {
				e = max(e, spans[i][1])
			}
			b = append(append(b, t[at:s]...), marker...)
			at = e
		}
		t = append(b, t[at:]...)
	}
	return t, passes
}

// runeUnits gives, for each byte of t, the valid UTF-8 character or the
// single invalid byte it belongs to, walking from the start.
func runeUnits(t []byte) [][2]int {
	u := make([][2]int, len(t))
	for i := 0; i < len(t); {
		_, n := utf8.DecodeRune(t[i:])
		for k := i; k < i+n; k++ {
			u[k] = [2]int{i, i + n}
		}
		i += n
	}
	return u
}
