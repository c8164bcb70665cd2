// Package inert turns text into what gatewayd posts to Mattermost so that
// nothing in it acts: text from the model or a tool fetches nothing, shows no
// image, notifies nobody and cannot fake the post around it. It also reads
// the owner's answers to an approval (a reaction or a reply). Pure functions,
// no I/O. docs/decisions.md, "Model text is inert in Mattermost", says what
// Mattermost's server and clients do with a post and why each rule is here.
package inert

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// replacement stands in for every character a post must not carry.
const replacement = '\uFFFD'

// wordJoiner starts a line whose first thing is a code span opened by three
// or more backticks: an old marked (the webapp's parser) would read such a
// line as a fence. It is the one format character gatewayd writes itself.
const wordJoiner = '\u2060'

// unsafeRune reports whether r must not reach a post as itself: control
// characters (Cc) and format characters (Cf: bidi overrides and isolates,
// zero widths, soft hyphen, tags, BOM) hide or reorder what the owner reads;
// U+2028 and U+2029 break lines in some renderers and not in others; U+2424
// is read as a line break by the marked the webapp uses. Callers decide
// about \n and \t before asking.
func unsafeRune(r rune) bool {
	return r == utf8.RuneError || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) ||
		r == '\u2028' || r == '\u2029' || r == '\u2424'
}

// clean normalises line endings (CR LF and CR become LF) and replaces every
// unsafe rune but \n and \t, and invalid UTF-8, with U+FFFD.
func clean(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c >= ' ' && c < 0x7f || c == '\n' || c == '\t' {
			b.WriteByte(c) // printable ASCII, the common case
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n == 1 && r == utf8.RuneError {
			b.WriteRune(replacement)
			i++
			continue
		}
		if r != '\n' && r != '\t' && unsafeRune(r) {
			r = replacement
		}
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// codeSpaces makes a code span's line breaks and tabs spaces.
var codeSpaces = strings.NewReplacer("\n", " ", "\t", " ")

// Code returns s as inline code that nothing inside it can end: a backtick
// run longer than any run in s, with a space inside each end when s starts or
// ends with a backtick (or starts and ends with a space, which CommonMark
// would otherwise strip). Line breaks (LF, CR LF, CR) and tabs become
// spaces; control and format characters (Cc, Cf: bidi overrides, zero
// widths), U+2028, U+2029, U+2424 and invalid UTF-8 become U+FFFD. The empty
// string becomes one space: CommonMark has no empty code span.
//
// A CommonMark parser reads the result back as exactly that content. The
// caller must not put a backtick, or another code span, right before or
// after it: runs that touch merge.
func Code(s string) string {
	c := codeSpaces.Replace(clean(s))
	if c == "" {
		return "` `"
	}
	fence := strings.Repeat("`", longestRun(c, '`')+1)
	pad := c[0] == '`' || c[len(c)-1] == '`' ||
		(c[0] == ' ' && c[len(c)-1] == ' ' && strings.Trim(c, " ") != "")
	if pad {
		return fence + " " + c + " " + fence
	}
	return fence + c + fence
}

// Fence returns s as a fenced code block: a line of backticks (at least
// three, and more than any run in s, so that no line of s can close it), s,
// and the same line again, without a final newline. Control and format
// characters other than \n and \t become U+FFFD as in Code, CR LF and CR
// become LF, and s gains a final newline when it has none. The block must
// start on a line of its own, with a blank line before and after it.
func Fence(s string) string {
	body := clean(s)
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	return fence + "\n" + body + fence
}

// cutRunes returns s cut to at most n runes, with "…" at the end when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "…"
}
