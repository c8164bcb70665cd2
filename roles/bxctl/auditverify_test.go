package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditVerifyFixtures: for every case of the tampering suite,
// `bxctl audit verify` prints what the case's expect.txt says, with exit
// status 1 exactly when the chain is broken.
func TestAuditVerifyPrintsEachFixturesExpectation(t *testing.T) {
	cases, err := filepath.Glob("../../fixtures/audit/*/expect.txt")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, expect := range cases {
		home := filepath.Dir(expect)
		t.Run(filepath.Base(home), func(t *testing.T) {
			want, err := os.ReadFile(expect)
			if err != nil {
				t.Fatal(err)
			}
			code, out, errs := run("audit", "verify", "--home", home)
			wantCode := 1
			if strings.HasPrefix(string(want), "audit: ok") {
				wantCode = 0
			}
			if code != wantCode || out != string(want) || errs != "" {
				t.Fatalf("exit %d (want %d), stderr %q, stdout\n%s\nwant\n%s", code, wantCode, errs, out, want)
			}
		})
	}
}

func TestAuditVerifyReadsBoxmakerHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOXMAKER_HOME", home)
	// No audit directory yet: nothing to read is an error, not "ok".
	code, out, errs := run("audit", "verify")
	if code != 1 || out != "" || !strings.HasPrefix(errs, "bxctl audit verify: ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	os.Mkdir(filepath.Join(home, "audit"), 0o700)
	if code, out, _ := run("audit", "verify"); code != 0 || out != "audit: ok, 0 records, head none\n" {
		t.Fatalf("empty log: exit %d, stdout %q", code, out)
	}
}
