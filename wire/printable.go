package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s as data for the owner's terminal (M3a §9): every
// character below U+0020, U+007F, and U+0080 to U+009F is written as
// \u00XX (ESC, U+001B, among them, wherever it is), so nothing a model or
// a file wrote can move the cursor, change colours or hide text. A byte
// that is not UTF-8 is written as \xXX. brokerd, bxctl, policy and audit
// all print text they did not write through it.
func Printable(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
