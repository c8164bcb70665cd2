package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/url"
)

// minForm is the shortest encoded form searched for. A form is only a run
// of base64, hex or percent characters; searched with whitespace removed,
// a shorter one turns up in ordinary text (every "41" for a secret "A"),
// while a secret whose forms are that short is guessable anyway. The exact
// bytes are always searched. docs/decisions.md, "Redacting a secret's
// encodings", argues the number.
const minForm = 4

// view is the copy of a text a form is searched in.
type view uint8

const (
	// stripped is the text with whitespace removed.
	stripped view = iota
	// folded is stripped with ASCII letters lowered, made only for a
	// short form found in any case that has no piece without letters to
	// anchor on (the hex of "\xaa\xbb").
	folded
)

// form is one encoded form of the value, searched with whitespace removed.
type form struct {
	m matcher
	// fold: found in any case (hex and %XX, which encoders write in
	// either); the pattern is in lower case.
	fold bool
	view view
	// tails are what follows the form when the value ends the encoded
	// stream (base64's last partial character and its padding), longest
	// first: an occurrence followed by one is extended over it.
	tails [][]byte
}

// encodedForms lists every encoded form of v at least minForm long.
func encodedForms(v []byte) []form {
	var fs []form
	add := func(pat string, fold bool, tails ...string) {
		if len(pat) < minForm {
			return
		}
		i := -1
		for k := range fs {
			if fs[k].fold == fold && string(fs[k].m.pat) == pat {
				i = k
				break
			}
		}
		if i < 0 {
			f := form{fold: fold, view: stripped}
			var ok bool
			// A long form goes to the sieve, which needs no anchor; a
			// short one without a caseless anchor is searched in the
			// folded copy.
			if f.m, ok = newMatcher([]byte(pat), fold); !ok && len(pat) < sieveMin {
				f.m, _ = newMatcher([]byte(pat), false)
				f.view = folded
			}
			fs = append(fs, f)
			i = len(fs) - 1
		}
		for _, t := range tails {
			if t != "" && !hasTail(fs[i].tails, t) {
				fs[i].tails = append(fs[i].tails, []byte(t))
			}
		}
		// Longest first, so the longest tail present wins.
		for a := 1; a < len(fs[i].tails); a++ {
			for b := a; b > 0 && len(fs[i].tails[b]) > len(fs[i].tails[b-1]); b-- {
				fs[i].tails[b], fs[i].tails[b-1] = fs[i].tails[b-1], fs[i].tails[b]
			}
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for a := range 3 {
			inner, pad, raw := base64Run(enc, v, a)
			add(inner, false, pad, raw)
		}
	}
	// Hex and %XX in lower case: they are found in any case.
	add(hex.EncodeToString(v), true)
	var all bytes.Buffer
	for _, c := range v {
		all.WriteByte('%')
		all.WriteString(hex.EncodeToString([]byte{c}))
	}
	add(all.String(), true)
	// url.QueryEscape and url.PathEscape keep some characters as they are,
	// so these are searched case-sensitively, with the escapes in upper
	// case (what Go, Python and JavaScript write) and in lower case. A
	// form that is the value itself is left to the exact search, which
	// does not let whitespace in: "pass word" is not "password".
	for _, e := range []string{url.QueryEscape(string(v)), url.PathEscape(string(v))} {
		for _, p := range []string{e, lowerEscapes(e)} {
			if p == string(v) || folds(fs, p) {
				continue
			}
			add(p, false)
		}
	}
	return fs
}

// base64Run is the run of v's encoding, with v starting a bytes into a
// 3-byte group, that v's bytes alone determine (inner), and what follows
// it when v ends the stream: padded and unpadded. Character c of an
// encoding carries bits [6c, 6c+6) of the stream; v holds bits
// [8a, 8(a+len(v))). The characters inside that range are fixed by v
// whatever surrounds it; the one before mixes in the previous byte and the
// one after the next byte, unless the stream ends there.
func base64Run(enc *base64.Encoding, v []byte, a int) (inner, pad, raw string) {
	buf := make([]byte, a+len(v))
	copy(buf[a:], v)
	full := enc.EncodeToString(buf)
	bits := 8 * (a + len(v))
	start, end, last := (8*a+5)/6, bits/6, (bits+5)/6
	if end <= start {
		return "", "", ""
	}
	return full[start:end], full[end:], full[end:last]
}

// lowerEscapes writes e's %XX escapes in lower case.
func lowerEscapes(e string) string {
	b := []byte(e)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lower[b[i+1]], lower[b[i+2]]
			i += 2
		}
	}
	return string(b)
}

// folds reports whether a folded form already finds p.
func folds(fs []form, p string) bool {
	l := []byte(p)
	for i, c := range l {
		l[i] = lower[c]
	}
	for _, f := range fs {
		if f.fold && bytes.Equal(f.m.pat, l) {
			return true
		}
	}
	return false
}

func hasTail(ts [][]byte, t string) bool {
	for _, x := range ts {
		if string(x) == t {
			return true
		}
	}
	return false
}
