// Package runbook builds the pointers that end every message about a state
// in which boxmaker refuses to work or withholds something:
// "see docs/runbook.md#<anchor>". docs/runbook.md has one level-2 heading
// per anchor, and the gate (package runbook/check) fails when a message
// names an anchor that has no heading.
package runbook

// See returns "see docs/runbook.md#<anchor>". Pass the anchor as a string
// literal: the gate reads the call's argument from the source, and refuses
// anything it cannot read.
func See(anchor string) string {
	return "see docs/runbook.md#" + anchor
}
