package inert

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// replaced is s with the documented replacements: line endings normalised
// to LF, invalid UTF-8 and every control or format character but LF and
// tab, U+2028, U+2029 and U+2424 as U+FFFD. Written apart from clean.
func replaced(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case strings.HasPrefix(s[i:], "\r\n"):
			b.WriteByte('\n')
			n = 2
		case r == '\r':
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError && n == 1, unicode.IsControl(r), unicode.In(r, unicode.Cf),
			r == '\u2028', r == '\u2029', r == '\u2424':
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// readSpan reads s as exactly one CommonMark code span and returns its
// content, or ok false.
func readSpan(s string) (content string, ok bool) {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	if n == 0 {
		return "", false
	}
	// The closing run is the first run of exactly n backticks.
	for i := n; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		k := i
		for k < len(s) && s[k] == '`' {
			k++
		}
		if k-i == n {
			if k != len(s) {
				return "", false // it closes before the end
			}
			c := strings.ReplaceAll(s[n:i], "\n", " ")
			if len(c) > 1 && c[0] == ' ' && c[len(c)-1] == ' ' && strings.Trim(c, " ") != "" {
				c = c[1 : len(c)-1]
			}
			return c, true
		}
		i = k
	}
	return "", false
}

// readFence reads s as exactly one fenced code block and returns its content.
func readFence(s string) (content string, ok bool) {
	lines := strings.Split(s, "\n")
	open := lines[0]
	if len(open) < 3 || strings.Trim(open, "`") != "" {
		return "", false
	}
	for i := 1; i < len(lines); i++ {
		l := strings.TrimLeft(lines[i], " ")
		if len(lines[i])-len(l) <= 3 && strings.HasPrefix(l, open) && strings.Trim(l, "` \t") == "" {
			if i != len(lines)-1 {
				return "", false // a line of the content closes it
			}
			if i == 1 {
				return "", true
			}
			return strings.Join(lines[1:i], "\n") + "\n", true
		}
	}
	return "", false
}

func wantCode(s string) string {
	c := strings.NewReplacer("\n", " ", "\t", " ").Replace(replaced(s))
	if c == "" {
		return " "
	}
	return c
}

func wantFence(s string) string {
	c := replaced(s)
	if c != "" && !strings.HasSuffix(c, "\n") {
		c += "\n"
	}
	return c
}

func checkCode(t *testing.T, s string) {
	t.Helper()
	out := Code(s)
	got, ok := readSpan(out)
	if !ok || got != wantCode(s) {
		t.Fatalf("Code(%q) = %q: reads back as %q (ok %v), want %q", s, out, got, ok, wantCode(s))
	}
	if p := check("a "+out+" b", false); len(p.problems) > 0 || len(p.spans) != 1 {
		t.Fatalf("Code(%q) = %q in a line: %d spans, %v", s, out, len(p.spans), p.problems)
	}
}

func checkFence(t *testing.T, s string) {
	t.Helper()
	out := Fence(s)
	got, ok := readFence(out)
	if !ok || got != wantFence(s) {
		t.Fatalf("Fence(%q) = %q: reads back as %q (ok %v), want %q", s, out, got, ok, wantFence(s))
	}
	p := check("before\n\n"+out+"\n\nafter", false)
	if len(p.problems) > 0 || len(p.fences) != 1 || p.fences[0] != got {
		t.Fatalf("Fence(%q) = %q in a post: fences %q, %v", s, out, p.fences, p.problems)
	}
}

func TestCode(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "`plain`",
		"a`b":            "``a`b``",
		"a``b`c":         "```a``b`c```",
		"`x":             "`` `x ``",
		"x`":             "`` x` ``",
		"`":              "`` ` ``",
		" x ":            "`  x  `",
		"  ":             "`  `",
		"":               "` `",
		"a\nb\r\nc\td":   "`a b c d`",
		"@channel\u202e": "`@channel\uFFFD`",
	} {
		if got := Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
		checkCode(t, in)
	}
}

func TestFence(t *testing.T) {
	for in, want := range map[string]string{
		"x":               "```\nx\n```",
		"x\n":             "```\nx\n```",
		"":                "```\n```",
		"```":             "````\n```\n````",
		"a\n`````\nb":     "``````\na\n`````\nb\n``````",
		"~~~\n@all":       "```\n~~~\n@all\n```",
		"a\r\nb\rc\x1b\t": "```\na\nb\nc\uFFFD\t\n```",
	} {
		if got := Fence(in); got != want {
			t.Errorf("Fence(%q) = %q, want %q", in, got, want)
		}
		checkFence(t, in)
	}
}

// TestCodeAndFenceHoldEveryRun: backtick runs of every length, where they
// could end the code, stay inside it.
func TestCodeAndFenceHoldEveryRun(t *testing.T) {
	for n := 1; n <= 20; n++ {
		run := strings.Repeat("`", n)
		for _, s := range []string{run, run + "x", "x" + run, "x" + run + "y", run + "\n@channel\n" + run,
			"   " + run, run + " ", "x\n" + run + "\n![x](https://a/b)", run + "x" + strings.Repeat("`", n+1)} {
			checkCode(t, s)
			checkFence(t, s)
		}
	}
}

func TestCodeAndFenceProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 20000; i++ {
		s := hostile(r)
		checkCode(t, s)
		checkFence(t, s)
	}
}

func FuzzCode(f *testing.F) {
	for _, s := range []string{"", "`", "a``b", " `x` ", "@channel\n![x](https://a)", "\r\n\t\u202e"} {
		f.Add(s)
	}
	f.Fuzz(checkCode)
}

func FuzzFence(f *testing.F) {
	for _, s := range []string{"", "```", "x\n````\ny", "~~~\n@all\n~~~", "\r\n\t\u202e", "   ```"} {
		f.Add(s)
	}
	f.Fuzz(checkFence)
}
