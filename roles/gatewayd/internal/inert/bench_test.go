package inert

import (
	"strings"
	"testing"

	"boxmaker/wire"
)

// BenchmarkTurnTextLong is the cost of one edit of a turn whose reply is a
// megabyte: the post is re-rendered at most about once a second.
func BenchmarkTurnTextLong(b *testing.B) {
	var tu Turn
	tu.Add(wire.TurnReply{Content: strings.Repeat("see https://example.com/x and `code` here, **bold**.\n", 20000)})
	for b.Loop() {
		_ = tu.Text()
	}
}

// BenchmarkText is Text on a typical reply of some 2 KB.
func BenchmarkText(b *testing.B) {
	s := strings.Repeat("The file `notes.md` says: call kyle@example.net or see https://example.com/a_b.\n\n", 25)
	for b.Loop() {
		_ = Text(s)
	}
}
