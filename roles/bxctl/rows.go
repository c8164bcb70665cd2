package bxctl

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// rows breaks each line of s into rows of at most width terminal columns,
// every row after a line's first behind the gutter (issue 12). A terminal
// wraps a long line itself, and its next row starts at the left edge: a
// model could fill a row and start the next with what looks like the
// client's own line. Breaking the line first, and marking the rest as the
// model's, leaves the terminal nothing to wrap. Columns are counted high:
// one for printable ASCII, two for anything else (wide characters are two,
// marks zero or one), so a row is never wider than counted. A width under
// minWidth is taken as minWidth; 0 means no terminal, and s is returned as
// it is.
func rows(s string, width int) string {
	if width <= 0 {
		return s
	}
	width = max(width, minWidth)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = rowsOf(l, width)
	}
	return strings.Join(lines, "\n")
}

// minWidth leaves room for the gutter and some text.
const minWidth = 16

func rowsOf(line string, width int) string {
	var b strings.Builder
	used, row, base := 0, 0, -1 // columns in this row; where it starts; where its last base starts
	for i, r := range line {
		w := 2
		if r < utf8.RuneSelf {
			w = 1
		}
		mark := unicode.Is(unicode.M, r)
		if used+w > width {
			// A mark stays with its base: break before the base, unless
			// the base began the row.
			cut := i
			if mark && base > row {
				cut = base
			}
			b.WriteString(line[row:cut])
			b.WriteString("\n" + gutter)
			used = columns(gutter) + columns(line[cut:i])
			row = cut
		}
		if !mark {
			base = i
		}
		used += w
	}
	b.WriteString(line[row:])
	return b.String()
}

// columns counts s as rows does.
func columns(s string) int {
	n := 0
	for _, r := range s {
		n += 2
		if r < utf8.RuneSelf {
			n--
		}
	}
	return n
}
