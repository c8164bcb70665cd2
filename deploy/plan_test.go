package deploy

import (
	"bytes"
	"flag"
	"os"
	"strings"
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
	// And it is what the command prints on its defaults.
	var stdout, stderr bytes.Buffer
	if code := Main("boxmaker deploy", []string{"plan", "--json"}, &stdout, &stderr); code != 0 || !bytes.Equal(stdout.Bytes(), want) {
		t.Fatalf("boxmaker deploy plan --json: status %d, %d bytes, stderr %q; want plan.json's %d bytes", code, stdout.Len(), stderr.String(), len(want))
	}
}

// Parameters the system could not hold are refused with the runbook line,
// from the command line as from Check.
func TestPlanRefusesBadParameters(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--prefix", "Boxmaker-"},
		{"plan", "--prefix", "boxmaker"},
		{"plan", "--home", "relative/home"},
		{"plan", "--home", "/var/lib/../lib/boxmaker"},
		{"plan", "--etc", "/etc/box maker"},
		{"plan", "--home", "/" + strings.Repeat("h", 90)},
		{"apply", "--dry-run", "--bin", "/"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main("boxmaker deploy", args, &stdout, &stderr)
		if code != 1 || stdout.Len() != 0 || !strings.HasSuffix(stderr.String(), "see docs/runbook.md#deploy-conflict\n") {
			t.Errorf("deploy %q: status %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
}
