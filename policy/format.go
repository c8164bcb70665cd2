package policy

import (
	"fmt"

	"boxmaker/wire"
)

// FormatProblem writes one grant problem as the owner reads it:
// "<file>:<line>: <problem>", or "<file>: <problem>" when there is no line.
// File names and problem texts can hold anything a file name or a TOML
// value can; control characters are printed as \u00XX so none reaches the
// terminal (the rule of M3a §9 for data shown to the owner).
func FormatProblem(p wire.GrantProblem) string {
	if p.Line != nil {
		return fmt.Sprintf("%s:%d: %s", wire.Printable(p.File), *p.Line, wire.Printable(p.Problem))
	}
	return wire.Printable(p.File) + ": " + wire.Printable(p.Problem)
}
