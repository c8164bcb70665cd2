package policy

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"boxmaker/wire"
)

// FormatProblem writes one grant problem as the owner reads it:
// "<file>:<line>: <problem>", or "<file>: <problem>" when there is no line.
// File names and problem texts can hold anything a file name or a TOML
// value can; control characters are printed as \u00XX so none reaches the
// terminal (the rule of M3a §9 for data shown to the owner).
func FormatProblem(p wire.GrantProblem) string {
	if p.Line != nil {
		return fmt.Sprintf("%s:%d: %s", escapeControls(p.File), *p.Line, escapeControls(p.Problem))
	}
	return escapeControls(p.File) + ": " + escapeControls(p.Problem)
}

// escapeControls replaces U+0000 to U+001F, U+007F and U+0080 to U+009F with
// \u00XX. Invalid UTF-8 bytes are printed as \xXX.
func escapeControls(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x20 || r >= 0x7F && r <= 0x9F:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
