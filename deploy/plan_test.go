package deploy

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite plan.json from the plan")

// plan.json is committed: the NixOS module reads it, so the gate checks
// that it is exactly what `boxmaker deploy plan --json` prints.
func TestPlanJSONIsCommitted(t *testing.T) {
	got := New(Default()).JSON()
	if *update {
		if err := os.WriteFile("plan.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("deploy/plan.json differs from the plan (%d bytes, want %d): run go test ./deploy -update and commit it", len(want), len(got))
	}
}
