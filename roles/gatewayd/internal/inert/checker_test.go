package inert

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The checker is the tests' oracle: it reads a post the way CommonMark does
// (block quotes of one level, fenced code, paragraphs; backslash escapes and
// code spans inside them), independently of how Text writes one, and
// reports everything outside code that a Mattermost server or client could
// act on, and every line that could open a block. It knows nothing of Text's
// rules beyond what a parser sees.

// parsed is what the checker found in a post.
type parsed struct {
	problems []string
	spans    []string // code spans' contents, as CommonMark reads them
	fences   []string // fenced blocks' contents
	outside  string   // the text outside code, escapes resolved, a space for each code span
	live     string   // the same with every escaped character as U+FFFC: what is syntax
}

var (
	reScheme = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*:[/\\%\pL\pN]`)
	reWWW    = regexp.MustCompile(`(?i)www\d{0,3}\.`)
	reDomain = regexp.MustCompile(`\.\pL\pL`)
)

// check parses post; quotes allows lines in a block quote (a Turn's model
// text), which must then be closed by a blank line.
func check(post string, quotes bool) parsed {
	var p parsed
	bad := func(format string, a ...any) { p.problems = append(p.problems, fmt.Sprintf(format, a...)) }
	for i, r := range post {
		switch {
		case r == '\n' || r == '\t':
		case r == wordJoiner:
			before := strings.TrimRightFunc(post[:i], func(r rune) bool { return r != '\n' && unicode.IsSpace(r) })
			if i+3 >= len(post) || post[i+3] != '`' || !(before == "" || before == ">" || strings.HasSuffix(before, "\n") || strings.HasSuffix(before, "\n>")) {
				bad("a word joiner that does not start a line before a code span, at byte %d", i)
			}
		case r == utf8.RuneError && !strings.HasPrefix(post[i:], "\uFFFD"):
			bad("invalid UTF-8 at byte %d", i)
		case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029', r == '\u2424':
			bad("character %U at byte %d", r, i)
		}
	}
	type line struct {
		text  string
		quote bool
	}
	var lines []line
	for _, l := range strings.Split(post, "\n") {
		if quotes && strings.HasPrefix(l, ">") {
			lines = append(lines, line{strings.TrimPrefix(l[1:], " "), true})
		} else {
			lines = append(lines, line{l, false})
		}
	}
	blank := func(s string) bool { return strings.Trim(s, " \t") == "" }
	var para []string
	flush := func() {
		if len(para) > 0 {
			p.inline(strings.Join(para, "\n"), bad)
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if prev := lines[max(0, i-1)]; i > 0 && l.quote != prev.quote {
			// Leaving a quote into a non-blank line would continue it
			// (a lazy continuation line); entering one ends a paragraph.
			if !(!prev.quote && blank(prev.text)) && !(!l.quote && blank(l.text)) {
				bad("line %d leaves or enters a block quote without a blank line", i+1)
			}
			flush()
		}
		if blank(l.text) {
			flush()
			continue
		}
		if c, n, ok := opensFence(l.text); ok {
			flush()
			if i > 0 && !blank(lines[i-1].text) {
				bad("line %d opens a fence right after a paragraph", i+1)
			}
			var content strings.Builder
			j := i + 1
			for ; j < len(lines) && lines[j].quote == l.quote && !closesFence(lines[j].text, c, n); j++ {
				content.WriteString(lines[j].text + "\n")
			}
			if j == len(lines) || lines[j].quote != l.quote {
				bad("line %d opens a fence that is never closed", i+1)
			} else if j+1 < len(lines) && !blank(lines[j+1].text) {
				bad("line %d closes a fence with text right after it", j+1)
			}
			p.fences = append(p.fences, content.String())
			i = j
			continue
		}
		checkLineStart(l.text, i+1, bad)
		para = append(para, l.text)
	}
	flush()
	return p
}

// opensFence is CommonMark's opening fence (at most three spaces, three or
// more backticks with no backtick after them, or three or more tildes).
func opensFence(l string) (c byte, n int, ok bool) {
	i := 0
	for i < len(l) && l[i] == ' ' {
		i++
	}
	if i > 3 || i == len(l) || (l[i] != '`' && l[i] != '~') {
		return 0, 0, false
	}
	c = l[i]
	for i+n < len(l) && l[i+n] == c {
		n++
	}
	if n < 3 || c == '`' && strings.Contains(l[i+n:], "`") {
		return 0, 0, false
	}
	return c, n, true
}

func closesFence(l string, c byte, n int) bool {
	i := 0
	for i < len(l) && l[i] == ' ' {
		i++
	}
	k := 0
	for i+k < len(l) && l[i+k] == c {
		k++
	}
	return i <= 3 && k >= n && strings.Trim(l[i+k:], " \t") == ""
}

// checkLineStart reports a paragraph line that could open a block in
// CommonMark, GFM or an old marked (which reads no-break spaces and tabs as
// spaces, and a line of three backticks as a fence whatever follows).
func checkLineStart(l string, n int, bad func(string, ...any)) {
	if r, _ := utf8.DecodeRuneInString(l); r == ' ' || r == '\t' || r == '\u00a0' {
		bad("line %d is indented with %U", n, r)
		return
	}
	l = strings.TrimLeftFunc(l, unicode.IsSpace)
	first, size := utf8.DecodeRuneInString(l)
	next, _ := utf8.DecodeRuneInString(l[size:])
	spaceNext := size == len(l) || unicode.IsSpace(next)
	digits := 0
	for digits < len(l) && l[digits] >= '0' && l[digits] <= '9' {
		digits++
	}
	switch {
	case strings.ContainsRune("#><[|~", first):
		bad("line %d starts with %q", n, first)
	case strings.ContainsRune("-+*", first) && spaceNext:
		bad("line %d starts a list item", n)
	case strings.ContainsRune("-*_=", first) && strings.Trim(l, "-*_= \t\u00a0") == "":
		bad("line %d is a thematic break or an underline", n)
	case digits > 0 && digits < len(l) && (l[digits] == '.' || l[digits] == ')') &&
		(digits+1 == len(l) || unicode.IsSpace(rune(l[digits+1]))):
		bad("line %d starts an ordered list item", n)
	case strings.HasPrefix(l, "```"):
		bad("line %d starts with three backticks", n)
	}
}

// inline reads one paragraph: escapes, code spans, and the rest.
func (p *parsed) inline(text string, bad func(string, ...any)) {
	spans := len(p.spans)
	var out, live strings.Builder
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\\' && i+1 < len(text) && isASCIIPunct(text[i+1]):
			out.WriteByte(text[i+1])
			live.WriteRune('\uFFFC')
			i += 2
		case c == '`':
			n := runAt(text, i)
			if end := closingRun(text, i+n, n); end >= 0 {
				p.spans = append(p.spans, spanContent(text[i+n:end]))
				out.WriteByte(' ')
				live.WriteByte(' ')
				i = end + n
			} else {
				bad("a run of %d backticks that opens no code span: %q", n, around(text, i))
				i += n
			}
		default:
			r, size := utf8.DecodeRuneInString(text[i:])
			out.WriteRune(r)
			live.WriteRune(r)
			if strings.ContainsRune("[]|$@", r) {
				bad("%q outside code, not escaped: %q", r, around(text, i))
			}
			i += size
		}
	}
	o, l := out.String(), live.String()
	p.outside += o + "\n"
	p.live += l + "\n"
	// The webapp's marked escapes neither < nor &, so an escaped one counts.
	if strings.ContainsAny(o, "@$<") {
		bad("@, $ or < outside code: %q", o)
	}
	rs := []rune(o)
	for i := 0; i+1 < len(rs); i++ {
		if (rs[i] == '#' || rs[i] == '~') && rs[i+1] != rs[i] && !unicode.IsSpace(rs[i+1]) {
			bad("a hashtag or channel link outside code: %q", string(rs[i:min(len(rs), i+12)]))
		}
		if rs[i] == '&' && (rs[i+1] == '#' || rs[i+1] < 0x80 && (unicode.IsLetter(rs[i+1]) || unicode.IsDigit(rs[i+1]))) {
			bad("an entity outside code: %q", string(rs[i:min(len(rs), i+12)]))
		}
	}
	// The webapp's marked finds emphasis and strikethrough before code
	// spans: a delimiter outside code could pair with one inside a span.
	code := strings.Join(p.spans[spans:], "")
	for _, c := range "*_~" {
		if strings.ContainsRune(code, c) && strings.ContainsRune(l, c) {
			bad("%q outside code, not escaped, while a code span of the paragraph holds one: %q", c, text)
		}
	}
	if strings.Contains(o, "//") {
		bad("// outside code: %q", o)
	}
	for _, re := range []*regexp.Regexp{reScheme, reWWW, reDomain} {
		if m := re.FindString(o); m != "" {
			bad("%q outside code (%s): %q", m, re, o)
		}
	}
}

func around(s string, i int) string {
	return s[max(0, i-20):min(len(s), i+20)]
}
