package wire

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s as data for the owner's terminal (M3a §9, issue 12):
// what the owner reads is what the bytes say, and nothing a model or a file
// wrote can move the cursor, change colours, reorder or hide text.
//
//   - A character is written as \uXXXX (\UXXXXXXXX above U+FFFF) unless it
//     is a visible letter, mark, number, punctuation or symbol, or U+0020:
//     so every control (Cc: below U+0020, U+007F, U+0080 to U+009F, ESC
//     wherever it is), format character (Cf: bidirectional controls, zero
//     widths, soft hyphen, tags), line and paragraph separator (Zl, Zp),
//     private-use character (Co), unassigned code point and noncharacter
//     (Cn), and every space but U+0020 (Zs). So are the default-ignorable
//     characters that are letters or marks (Hangul fillers, variation
//     selectors, the combining grapheme joiner) and U+2800, the blank
//     Braille pattern: each shows as nothing or as a space.
//   - A combining mark is escaped where it cannot be an accent: at the
//     start, after an escaped character, after ASCII that is not a letter or
//     digit (a mark on `;` or `/` can disguise it), and after maxMarks marks
//     on one base (stacked marks draw over the lines around them).
//   - A run of minRun or more of one escaped character, or of minSpaceRun
//     or more of U+0020, is written once with its count: `\u0020{400}`, so
//     padding cannot push the rest of a line off the screen.
//   - A byte that is not UTF-8 is written as \xXX.
//   - So that none of these can be forged by text that spells one: a
//     backslash is written \\ (so JSON's \" in arguments reads \\"), and
//     a "{" right after an escape or a count is escaped itself.
//
// brokerd, bxctl, policy and audit all print text they did not write
// through it.
func Printable(s string) string {
	var p printer
	p.b.Grow(len(s))
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			p.put(fmt.Sprintf(`\x%02x`, s[0]), true)
			p.base, p.marks = false, 0
		case r == '\\':
			// Every backslash, so that none reads as the start of an escape.
			p.put(`\\`, false)
			p.base, p.marks = false, 0
		case r == '{' && p.escapedLast():
			// A brace that would read as an escape's count.
			p.put(Escape(r), true)
			p.base, p.marks = false, 0
		default:
			p.rune(r)
		}
		s = s[n:]
	}
	p.flush()
	return p.b.String()
}

const (
	// maxMarks is the most combining marks shown on one base character:
	// enough for Vietnamese and Indic syllables, too few to stack.
	maxMarks = 4
	// minRun is the shortest run of one escaped character written with its
	// count.
	minRun = 4
	// minSpaceRun is the shortest run of U+0020 written with its count:
	// longer than the spaces that align a table's columns (ls -l, ps) or
	// indent code a few levels, which stay legible as they are, and far
	// shorter than a screen's width, so padding still cannot push text
	// out of sight.
	minSpaceRun = 16
)

// printer writes tokens (one character's output), holding back the last
// one while it repeats so that a run can be written with its count.
type printer struct {
	b       strings.Builder
	tok     string // the token being repeated
	n       int    // how many times
	compact bool   // tok may be written with a count
	base    bool   // the last character written can carry an accent
	marks   int    // combining marks written on it so far
}

func (p *printer) rune(r rune) {
	mark := unicode.Is(unicode.M, r)
	if Shown(r) && (!mark || p.base && p.marks < maxMarks) {
		p.put(string(r), r == ' ')
		if mark {
			p.marks++
		} else {
			p.base = r > unicode.MaxASCII || '0' <= r && r <= '9' || 'a' <= r|0x20 && r|0x20 <= 'z'
			p.marks = 0
		}
		return
	}
	p.put(Escape(r), true)
	p.base, p.marks = false, 0
}

// escapedLast reports whether what was last written ends in an escape or
// a count, which a "{" after it would seem to extend.
func (p *printer) escapedLast() bool {
	if p.n == 0 {
		return false
	}
	if p.tok == " " {
		return p.n >= minSpaceRun
	}
	return len(p.tok) > 1 && p.tok[0] == '\\' && p.tok != `\\`
}

func (p *printer) put(tok string, compact bool) {
	if tok == p.tok && p.n > 0 {
		p.n++
		return
	}
	p.flush()
	p.tok, p.n, p.compact = tok, 1, compact
}

func (p *printer) flush() {
	switch {
	case p.tok == " " && p.n >= minSpaceRun:
		fmt.Fprintf(&p.b, `\u0020{%d}`, p.n)
	case p.tok != " " && p.n >= minRun && p.compact:
		fmt.Fprintf(&p.b, "%s{%d}", p.tok, p.n)
	default:
		for range p.n {
			p.b.WriteString(p.tok)
		}
	}
	p.n = 0
}

// Escape is r as Printable writes a character it does not show: \u and
// four hex digits, or \U and eight above U+FFFF.
func Escape(r rune) string {
	if r <= 0xffff {
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

// Shown says whether r is written as itself (before the rule for marks):
// a graphic character of a category that draws something, or U+0020. It is
// also the one rule for text kept on one line elsewhere (an owner's refusal
// reason: gatewayd makes it so, brokerd checks it), so the two cannot drift.
func Shown(r rune) bool {
	if r == ' ' {
		return true
	}
	if r < 0x7f {
		return r > ' '
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S) &&
		!unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) && r != 0x2800
}
