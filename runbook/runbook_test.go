package runbook

import (
	"testing"

	"boxmaker/runbook/check"
)

func TestSee(t *testing.T) {
	if got, want := See("grants-invalid"), "see docs/runbook.md#grants-invalid"; got != want {
		t.Errorf("See = %q, want %q", got, want)
	}
}

// TestEveryReferencedAnchorHasAnEntry is the runbook check over the whole
// repository: every anchor named in Go source has a "## <anchor>" entry in
// docs/runbook.md with its five parts.
func TestEveryReferencedAnchorHasAnEntry(t *testing.T) {
	problems, err := check.Check("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
