package wire

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 漢字": "plain text, é and 漢字",
		"\x1b[31mred":          `\u001b[31mred`,
		"a\x00b\x1fc\x7fd":     `a\u0000b\u001fc\u007fd`,
		"\u0080\u009b\u009f":   `\u0080\u009b\u009f`,
		"\u00a0 is escaped":    `\u00a0 is escaped`,
		"tab\tnl\ncr\r":        `tab\u0009nl\u000acr\u000d`,
		"bad \xff byte":        `bad \xff byte`,
		"":                     "",
		"two  three   spaces":  "two  three   spaces",
		"four    spaces":       "four    spaces",
		"fifteen" + strings.Repeat(" ", 15) + "spaces": "fifteen" + strings.Repeat(" ", 15) + "spaces",
		"sixteen" + strings.Repeat(" ", 16) + "spaces": `sixteen\u0020{16}spaces`,
		// Text that spells an escape or a count cannot pass for one.
		`\u202e literally`:                      `\\u202e literally`,
		`\` + "\x1b":                            `\\\u001b`,
		`json "a\"b\n"`:                         `json "a\\"b\\n"`,
		"\u200b{5}":                             `\u200b\u007b5}`,
		"pad" + strings.Repeat(" ", 20) + "{3}": `pad\u0020{20}\u007b3}`,
		"a{3}":                                  "a{3}",
		"\t\t\t\t\t|":                           `\u0009{5}|`,
		"\xff\xff\xff\xff":                      `\xff{4}`,
		"aaaa":                                  "aaaa", // a run of text is text
		"ZW\u200b\u200b\u200bJ":                 `ZW\u200b\u200b\u200bJ`,
		// The example: right-to-left override, isolates, a tag.
		"cat a ; rm -rf ~/notes #\u202e\u2066txt.ssap\u2069\U000e0041": `cat a ; rm -rf ~/notes #\u202e\u2066txt.ssap\u2069\U000e0041`,
		"soft\u00adhyphen, line\u2028para\u2029":                       `soft\u00adhyphen, line\u2028para\u2029`,
		"\ufeffbom, private \ue000 \U000f0000":                         `\ufeffbom, private \ue000 \U000f0000`,
		"nonchar \ufdd0\uffff\U0010ffff, unassigned \u0378":            `nonchar \ufdd0\uffff\U0010ffff, unassigned \u0378`,
		"hangul\u3164filler, braille\u2800blank, cgj\u034f":            `hangul\u3164filler, braille\u2800blank, cgj\u034f`,
		"ideographic\u3000space, thin\u2009space":                      `ideographic\u3000space, thin\u2009space`,
		// Accents stay on letters; marks elsewhere, or stacked, do not.
		"cafe\u0301, Tiê\u0301ng, हिन्दी":                         "cafe\u0301, Tiê\u0301ng, हिन्दी",
		"\u0301start ;\u0338 /\u20e5 \u0301":                      `\u0301start ;\u0338 /\u20e5 \u0301`,
		"z\u0300\u0301\u0302\u0303\u0304\u0305\u0305\u0305\u0305": "z\u0300\u0301\u0302\u0303" + `\u0304\u0305{4}`,
		"\x1b\u0301": `\u001b\u0301`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// mustEscape is the naive oracle, read from the Unicode tables: the
// categories issue 12 names (Cc, Cf, Zl, Zp, Co), surrogates (Cs), code
// points that are unassigned or noncharacters (Cn), and every space but
// U+0020.
func mustEscape(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs, unicode.Cn) ||
		unicode.Is(unicode.Zs, r) && r != ' '
}

// TestPrintableEscapesCategories: every code point the oracle names is
// written as its escape, alone and between letters, and no other graphic
// character is.
func TestPrintableEscapesCategories(t *testing.T) {
	escaped := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xd800 <= r && r <= 0xdfff {
			continue // surrogates are not UTF-8; Printable sees \xXX bytes
		}
		s := string(r)
		if !mustEscape(r) {
			if r == '\\' {
				if Printable(s) != `\\` {
					t.Errorf("a backslash: got %q, want it doubled", Printable(s))
				}
				continue
			}
			if unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) && Shown(r) && Printable(s) != s {
				t.Errorf("U+%04X: graphic, got %q", r, Printable(s))
			}
			continue
		}
		escaped++
		if got := Printable(s); got != Escape(r) {
			t.Fatalf("U+%04X: Printable = %q, want %q", r, got, Escape(r))
		}
		// Between letters too, but not for all of planes 4 to 13, every
		// code point of which is unassigned: it keeps the race run short.
		if 0x40000 <= r && r < 0xe0000 && r%251 != 0 {
			continue
		}
		if got := Printable("x" + s + "y"); got != "x"+Escape(r)+"y" || strings.ContainsRune(got, r) {
			t.Fatalf("U+%04X between letters: %q", r, got)
		}
	}
	// The tables were really read: Unicode 15 has these many and more.
	for name, least := range map[string]int{"Cc": 65, "Cf": 160, "Zl": 1, "Zp": 1, "Co": 137000, "Cn": 800000, "Zs": 17} {
		if n := size(unicode.Categories[name]); n < least {
			t.Errorf("%s holds %d code points, want at least %d", name, n, least)
		}
	}
	if escaped < 950000 {
		t.Errorf("%d code points escaped", escaped)
	}
}

// size counts the code points of a table.
func size(tab *unicode.RangeTable) int {
	n := 0
	for _, r := range tab.R16 {
		n += int((r.Hi-r.Lo)/r.Stride) + 1
	}
	for _, r := range tab.R32 {
		n += int((r.Hi-r.Lo)/r.Stride) + 1
	}
	return n
}

// checkPrintable is the property: valid UTF-8; no rune the oracle names, no
// default-ignorable one; no minSpaceRun spaces together; no mark at the start,
// after ASCII that is not a letter or digit, or more than maxMarks in a row.
func checkPrintable(t *testing.T, in string) {
	t.Helper()
	out := Printable(in)
	if !utf8.ValidString(out) {
		t.Fatalf("Printable(%q) = %q: not UTF-8", in, out)
	}
	if back, err := unprintable(out); err != nil || back != in {
		t.Fatalf("Printable(%q) = %q, which reads back as %q (%v): not what was written", in, out, back, err)
	}
	if strings.Contains(out, strings.Repeat(" ", minSpaceRun)) {
		t.Fatalf("Printable(%q) = %q: a run of spaces", in, out)
	}
	prev, marks := rune(-1), 0
	for _, r := range out {
		if mustEscape(r) || unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) {
			t.Fatalf("Printable(%q) = %q: U+%04X shown", in, out, r)
		}
		if unicode.Is(unicode.M, r) {
			marks++
			if prev < 0 || prev <= unicode.MaxASCII && !unicode.IsLetter(prev) && !unicode.IsDigit(prev) || marks > maxMarks {
				t.Fatalf("Printable(%q) = %q: mark U+%04X after U+%04X (%d marks)", in, out, r, prev, marks)
			}
			continue
		}
		prev, marks = r, 0
	}
}

// TestPrintableProperty: strings drawn from the characters that hide or
// move text, mixed with plain ones, by a seeded xorshift generator.
func TestPrintableProperty(t *testing.T) {
	pool := []rune{' ', ' ', 'a', ';', '/', '\\', 'e', 'é', '漢', '\t', '\n', '\r', 0x1b, 0x7f, 0x85, 0x9b,
		0xa0, 0xad, 0x300, 0x301, 0x338, 0x34f, 0x61c, 0x115f, 0x180e, 0x200b, 0x200d, 0x200e, 0x2028, 0x2029,
		0x202e, 0x2066, 0x2069, 0x2800, 0x3000, 0x3164, 0xfe0f, 0xfeff, 0xfffe, 0xe000, 0xe0041, 0xe007f,
		0xe0100, 0xf0000, 0x10ffff, 0x378, 0x20e5, 0x94d}
	x := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	for range 20000 {
		var b strings.Builder
		for range next() % 40 {
			if next()%16 == 0 {
				b.WriteByte(byte(next())) // maybe not UTF-8
				continue
			}
			b.WriteRune(pool[next()%uint64(len(pool))])
		}
		checkPrintable(t, b.String())
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("cat a ; rm -rf ~/notes #\u202e\u2066txt\u2069")
	f.Add("a\u0301\u0301\u0301\u0301\u0301 \u0301;\u0338")
	f.Add("pad" + strings.Repeat(" ", 500) + "\u200b\u200b\u200b\u200b\xff")
	f.Fuzz(func(t *testing.T, s string) { checkPrintable(t, s) })
}

// unprintable reads Printable's output back: \\, \uXXXX, \UXXXXXXXX and
// \xXX, each maybe with a {count}, and every other character as itself. That
// it always gives back the input shows that no text can pass for an
// escape or a count that Printable did not write.
func unprintable(out string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(out); {
		if out[i] != '\\' {
			b.WriteByte(out[i])
			i++
			continue
		}
		if i+1 >= len(out) {
			return b.String(), fmt.Errorf("a lone backslash at the end")
		}
		var tok string
		switch out[i+1] {
		case '\\':
			b.WriteByte('\\')
			i += 2
			continue
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[out[i+1]]
			if i+2+width > len(out) {
				return b.String(), fmt.Errorf("a short escape")
			}
			v, err := strconv.ParseUint(out[i+2:i+2+width], 16, 32)
			if err != nil {
				return b.String(), err
			}
			if out[i+1] == 'x' {
				tok = string([]byte{byte(v)})
			} else {
				tok = string(rune(v))
			}
			i += 2 + width
		default:
			return b.String(), fmt.Errorf("a backslash before %q", out[i+1])
		}
		n := 1
		if i < len(out) && out[i] == '{' {
			end := strings.IndexByte(out[i:], '}')
			if end < 0 {
				return b.String(), fmt.Errorf("an open count")
			}
			c, err := strconv.Atoi(out[i+1 : i+end])
			if err != nil {
				return b.String(), err
			}
			n, i = c, i+end+1
		}
		b.WriteString(strings.Repeat(tok, n))
	}
	return b.String(), nil
}
