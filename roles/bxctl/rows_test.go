package bxctl

import (
	"strings"
	"testing"
)

func TestRows(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 80, "short"},
		{"0123456789abcdefghij", 0, "0123456789abcdefghij"},
		// The gutter counts three: "│" may be two columns wide.
		{"│ 0123456789abcdefghijklmnopqrstuvwxyz", 16, "│ 0123456789abc\n│ defghijklmnop\n│ qrstuvwxyz"},
		{"│ 漢字漢字漢字漢字", 16, "│ 漢字漢字漢字\n│ 漢字"},
		{"│ abcdefghijklm\u0301", 16, "│ abcdefghijkl\n│ m\u0301"}, // a mark stays with its base
		{"a\nb", 16, "a\nb"},
	} {
		if got := rows(tc.in, tc.width); got != tc.want {
			t.Errorf("rows(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

// TestRowsNeverWider: every row fits, counted as a terminal at worst would,
// and every row after a line's first starts with the gutter.
func TestRowsNeverWider(t *testing.T) {
	pool := []string{"a", " ", "漢", "e\u0301", "\u0301", "│", "x"}
	x := uint64(88172645463325252)
	for range 2000 {
		var b strings.Builder
		for range 1 + x%300 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b.WriteString(pool[x%uint64(len(pool))])
		}
		width := 16 + int(x%100)
		for i, row := range strings.Split(rows(b.String(), width), "\n") {
			if columns(row) > width {
				t.Fatalf("width %d: row %q is %d columns", width, row, columns(row))
			}
			if i > 0 && !strings.HasPrefix(row, gutter) {
				t.Fatalf("row %d %q not behind the gutter", i, row)
			}
		}
	}
}
