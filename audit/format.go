package audit

import (
	"fmt"
	"io"
	"strings"

	"boxmaker/wire"
)

// FormatReport writes what `bxctl audit verify` prints for rep and reports
// whether the log verified (the CLI exits 1 when it did not).
func FormatReport(w io.Writer, rep ChainReport) (bool, error) {
	var b strings.Builder
	if f := rep.Failure; f != nil {
		fmt.Fprintf(&b, "%s: %s\nsee docs/runbook.md#audit-chain-broken\n", f.Location, wire.Printable(f.What))
		_, err := io.WriteString(w, b.String())
		return false, err
	}
	head := "none"
	if rep.Head != nil {
		head = rep.Head.String()
	}
	fmt.Fprintf(&b, "audit: ok, %d records, head %s\n", rep.Records, head)
	for _, l := range rep.Recoveries {
		fmt.Fprintf(&b, "recovered: %s\n", l)
	}
	for _, l := range rep.AcceptedBreaks {
		fmt.Fprintf(&b, "accepted break: %s\n", l)
	}
	for _, l := range rep.AcceptedHeads {
		fmt.Fprintf(&b, "accepted head: %s\n", l)
	}
	for _, seq := range rep.Abandoned {
		fmt.Fprintf(&b, "abandoned approval: %d\n", seq)
	}
	for _, l := range rep.ClockWarnings {
		fmt.Fprintf(&b, "clock went backwards: %s\n", l)
	}
	if l := rep.TornTail; l != nil {
		fmt.Fprintf(&b, "torn final line: %s (brokerd recovers it when it starts)\n", l)
	}
	_, err := io.WriteString(w, b.String())
	return true, err
}
