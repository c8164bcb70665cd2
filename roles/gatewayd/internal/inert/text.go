package inert

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// enSpace stands for a space or tab that indents a line: Markdown parsers
// read leading spaces (and marked, the webapp's, also no-break spaces and
// tabs) as indentation that can open a code block or nest a list, and an
// en space is neither to any of them, while it still shows as a gap.
const enSpace = '\u2002'

// Text makes text from the model (or a tool) inert in a Mattermost post.
//
// Every word that could be read as a URL (a scheme, "//", "www.", a dot
// followed by two letters, as in a bare domain), a mention or an email
// address (any @), a channel link (~name), a hashtag (#tag), LaTeX (any $),
// HTML or an angle autolink (any <) or an entity (&name, &#) goes whole into
// inline code, where no client or server autolinks, previews, notifies or
// renders it. [ ] | and stray backticks are backslash-escaped, so no link,
// image, reference definition or table can form, and so are * _ ~ in a
// paragraph whose code spans hold them (the webapp's marked would let
// emphasis end inside a code span). A line's first character is escaped when
// it could open a block (heading, quote, list, thematic break, setext
// underline), leading spaces, tabs and no-break spaces become en spaces, so
// nothing indents into a code block, and a line that starts with a code span
// of three or more backticks starts with a word joiner, so no old marked
// reads a fence. The model's own code spans and fenced blocks are kept as
// code, rewritten with Code and Fence; a fence drops an info string that
// names a language (```latex would render) and shows any other as a line
// before it. Control and format characters become U+FFFD as in Code.
// Ordinary prose (letters, digits, common punctuation, emphasis, line
// breaks) comes out as it went in.
func Text(s string) string {
	var out []string
	for _, b := range blocks(clean(s)) {
		if b.fence {
			out = append(out, Fence(b.text))
		} else {
			out = append(out, paragraph(b.text))
		}
	}
	return strings.Join(out, "\n\n")
}

// block is a fenced code block's content or a paragraph's lines.
type block struct {
	fence bool
	text  string
}

// language matches an info string that only names a language, which a
// fence may drop; any other is shown as a line before the block, so that
// no text the model wrote is hidden.
func language(info string) bool {
	if len(info) > 32 {
		return false
	}
	for i := 0; i < len(info); i++ {
		c := info[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_+.#-", c) >= 0) {
			return false
		}
	}
	return true
}

// blocks splits s into paragraphs (runs of non-blank lines) and fenced code
// blocks, found by CommonMark's rules: an opening fence of three or more
// backticks or tildes indented at most three spaces, closed by a line of at
// least as many of the same character, or else by the end of the text.
func blocks(s string) []block {
	var out []block
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, block{text: strings.Join(para, "\n")})
			para = nil
		}
	}
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimFunc(line, unicode.IsSpace) == "" {
			flush()
			continue
		}
		c, n, indent, ok := fenceOpening(line)
		if !ok {
			para = append(para, line)
			continue
		}
		flush()
		if info := strings.TrimSpace(line[indent+n:]); !language(info) {
			out = append(out, block{text: info})
		}
		var content strings.Builder
		for i++; i < len(lines) && !fenceClosing(lines[i], c, n); i++ {
			l := lines[i]
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			content.WriteString(l + "\n")
		}
		out = append(out, block{fence: true, text: content.String()})
	}
	flush()
	return out
}

// leadingSpaces counts the spaces (only U+0020) that start line.
func leadingSpaces(line string) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// fenceOpening reports whether line opens a fence: its character, the
// length of its run and its indentation.
func fenceOpening(line string) (c byte, n, indent int, ok bool) {
	indent = leadingSpaces(line)
	if indent > 3 || indent == len(line) {
		return 0, 0, 0, false
	}
	c = line[indent]
	if c != '`' && c != '~' {
		return 0, 0, 0, false
	}
	for indent+n < len(line) && line[indent+n] == c {
		n++
	}
	if n < 3 || (c == '`' && strings.Contains(line[indent+n:], "`")) {
		return 0, 0, 0, false
	}
	return c, n, indent, true
}

func fenceClosing(line string, c byte, n int) bool {
	i := leadingSpaces(line)
	if i > 3 {
		return false
	}
	k := 0
	for i+k < len(line) && line[i+k] == c {
		k++
	}
	return k >= n && strings.Trim(line[i+k:], " \t") == ""
}

// piece is part of a word: a code span's content, or literal text (esc: the
// model wrote it backslash-escaped).
type piece struct {
	code bool
	esc  bool
	lit  string
	from int // where a text piece starts in the paragraph, to grow it
}

// word is a run of text and code spans between whitespace, and its source.
type word struct {
	pieces []piece
	raw    string
}

// paragraph renders one paragraph's lines.
func paragraph(p string) string {
	type item struct {
		w   *word
		sep byte
	}
	var items []item
	words(p, func(w *word, sep byte) { items = append(items, item{w, sep}) })
	// The marked the webapp uses finds emphasis (*, _) and strikethrough
	// (~~) before code spans, so a delimiter in the prose could pair with one
	// inside a code span and leave the rest of that span as text. Where any
	// code span of the paragraph holds such a character, it is escaped in
	// the prose; elsewhere the model's emphasis is kept.
	var inCode strings.Builder
	for _, it := range items {
		if it.w != nil {
			inCode.WriteString(it.w.code())
		}
	}
	delims := ""
	for _, c := range "*_~" {
		if strings.ContainsRune(inCode.String(), c) {
			delims += string(c)
		}
	}
	var b strings.Builder
	for _, it := range items {
		if it.w != nil {
			b.WriteString(it.w.render(delims))
		} else {
			b.WriteByte(it.sep)
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = lineStart(l)
	}
	return strings.Join(lines, "\n")
}

// words splits a paragraph into words and the whitespace between them (a
// space, tab or line break, passed as sep with a nil word), finding code
// spans by CommonMark's rule: a backtick run opens one that the next run of
// exactly its length closes, and a backslash escapes a backtick outside them.
func words(p string, emit func(w *word, sep byte)) {
	var w *word
	start := 0
	end := func(i int) {
		if w != nil {
			w.raw = p[start:i]
			emit(w, 0)
			w = nil
		}
	}
	add := func(i int, pc piece) {
		if w == nil {
			w, start = &word{}, i
		}
		if k := len(w.pieces) - 1; k >= 0 && !pc.code && !pc.esc && !w.pieces[k].code && !w.pieces[k].esc {
			// Text runs on: the piece is the paragraph from its start.
			w.pieces[k].lit = p[w.pieces[k].from : i+len(pc.lit)]
			return
		}
		pc.from = i
		w.pieces = append(w.pieces, pc)
	}
	for i := 0; i < len(p); {
		switch c := p[i]; {
		case c == ' ' || c == '\t' || c == '\n':
			end(i)
			emit(nil, c)
			i++
		case c == '\\' && i+1 < len(p) && isASCIIPunct(p[i+1]):
			add(i, piece{esc: true, lit: p[i+1 : i+2]})
			i += 2
		case c == '`':
			n := runAt(p, i)
			if close := closingRun(p, i+n, n); close >= 0 {
				add(i, piece{code: true, lit: spanContent(p[i+n : close])})
				i = close + n
			} else {
				add(i, piece{lit: p[i : i+n]})
				i += n
			}
		default:
			_, size := utf8.DecodeRuneInString(p[i:])
			add(i, piece{lit: p[i : i+size]})
			i += size
		}
	}
	end(len(p))
}

func isASCIIPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z')
}

// runAt is the length of the backtick run at p[i].
func runAt(p string, i int) int {
	n := 0
	for i+n < len(p) && p[i+n] == '`' {
		n++
	}
	return n
}

// closingRun finds, from from, the start of the next backtick run of exactly
// n, or -1.
func closingRun(p string, from, n int) int {
	for i := from; i < len(p); {
		if p[i] != '`' {
			i++
			continue
		}
		k := runAt(p, i)
		if k == n {
			return i
		}
		i += k
	}
	return -1
}

// spanContent is a code span's content as CommonMark reads it: line breaks
// become spaces, and one space is stripped from each end when both ends have
// one and the content is not all spaces.
func spanContent(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) >= 2 && s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "" {
		s = s[1 : len(s)-1]
	}
	return s
}

// acts reports whether the word's text, its code spans left out, could
// act, read with its escapes resolved (as CommonMark does) or kept (as the
// webapp's marked keeps \" or \:).
func (w *word) acts() bool {
	var resolved, kept strings.Builder
	for _, pc := range w.pieces {
		if pc.esc {
			kept.WriteByte('\\')
		}
		if !pc.code {
			resolved.WriteString(pc.lit)
			kept.WriteString(pc.lit)
		}
	}
	return acts(resolved.String()) || acts(kept.String())
}

// code is what the word puts in code spans.
func (w *word) code() string {
	if w.acts() {
		return w.raw
	}
	var b strings.Builder
	for _, pc := range w.pieces {
		if pc.code {
			b.WriteString(pc.lit)
		}
	}
	return b.String()
}

// render writes a word: whole as inline code when its text could act, else
// its text escaped and its code spans as Code. Escaped are the characters
// that could make a link, an image or a table ([ ] |), stray backticks, a
// backslash that would escape what follows it, and delims.
func (w *word) render(delims string) string {
	if w.acts() {
		return Code(w.raw)
	}
	var b strings.Builder
	for _, pc := range w.pieces {
		switch {
		case pc.code:
			b.WriteString(Code(pc.lit))
		case pc.esc:
			b.WriteString(`\` + pc.lit)
		default:
			for i, r := range pc.lit {
				if r == '\\' && i+1 < len(pc.lit) && !isASCIIPunct(pc.lit[i+1]) {
					// Literal before a letter in every parser; escaped, the
					// webapp's marked would show both backslashes.
					b.WriteRune(r)
					continue
				}
				if strings.ContainsRune("\\`[]|", r) || strings.ContainsRune(delims, r) {
					b.WriteByte('\\')
				}
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// lineStart makes a rendered line start as a paragraph's line: indentation
// (spaces, tabs and no-break spaces, which the webapp's marked reads as
// spaces) becomes en spaces, other white space before the first character
// stays, and a first character that could open a block is escaped.
func lineStart(l string) string {
	var b strings.Builder
	i := 0
	for i < len(l) {
		r, size := utf8.DecodeRuneInString(l[i:])
		if !unicode.IsSpace(r) {
			break
		}
		switch r {
		case ' ', '\u00a0':
			b.WriteRune(enSpace)
		case '\t':
			b.WriteString(strings.Repeat(string(enSpace), 4))
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteString(opening(l[i:]))
	return b.String()
}

// opening escapes what would make rest, a line's content, open a block.
func opening(rest string) string {
	if rest == "" {
		return ""
	}
	first, size := utf8.DecodeRuneInString(rest)
	next, _ := utf8.DecodeRuneInString(rest[size:])
	spaceNext := size == len(rest) || unicode.IsSpace(next)
	switch {
	case first == '`':
		// Literal backticks are escaped, so this opens a code span.
		if runAt(rest, 0) >= 3 {
			return string(wordJoiner) + rest
		}
		return rest
	case strings.ContainsRune("#>~", first),
		strings.ContainsRune("-+*", first) && spaceNext,
		strings.ContainsRune("-*_=", first) && strings.Trim(rest, "-*_= \t\u00a0") == "":
		return `\` + rest
	}
	d := 0
	for d < len(rest) && '0' <= rest[d] && rest[d] <= '9' {
		d++
	}
	if d > 0 && d < len(rest) && (rest[d] == '.' || rest[d] == ')') {
		after, _ := utf8.DecodeRuneInString(rest[d+1:])
		if d+1 == len(rest) || unicode.IsSpace(after) {
			return rest[:d] + `\` + rest[d:]
		}
	}
	return rest
}
