package wire

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 漢字": "plain text, é and 漢字",
		"\x1b[31mred":          `\u001b[31mred`,
		"a\x00b\x1fc\x7fd":     `a\u0000b\u001fc\u007fd`,
		"\u0080\u009b\u009f":   `\u0080\u009b\u009f`,
		"\u00a0 stays":         "\u00a0 stays",
		"tab\tnl\ncr\r":        `tab\u0009nl\u000acr\u000d`,
		"bad \xff byte":        `bad \xff byte`,
		"":                     "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
