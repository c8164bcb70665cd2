package bxctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/audit"
	"boxmaker/wire"
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

// TestAuditVerifyChecksTheHead: where brokerd keeps a head, verify holds the
// log to it as brokerd's startup does; a log cut back to a chain that still
// verifies is reported, with status 1.
func TestAuditVerifyChecksTheHead(t *testing.T) {
	home := t.TempDir()
	headFile := filepath.Join(home, "broker", "audit-head")
	w, _, err := audit.Open(filepath.Join(home, "audit"), audit.Options{HeadFile: headFile})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := w.Append(wire.RecoveryEvent{TornBytes: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("audit", "verify", "--home", home)
	if code != 0 || errs != "" || !strings.HasSuffix(out, "\nhead: the log holds record 2, which "+headFile+" names\n") {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, errs, out)
	}
	// The last record removed: the rest is still a chain.
	logs, _ := filepath.Glob(filepath.Join(home, "audit", "*.jsonl"))
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(logs[0], []byte(strings.Join(lines[:2], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run("audit", "verify", "--home", home)
	if code != 1 || !strings.HasPrefix(out, "audit: ok, 2 records, head ") ||
		!strings.Contains(out, "\naudit: the log ends before record 2, which the head in "+headFile) ||
		!strings.HasSuffix(out, "\nsee docs/runbook.md#audit-head-mismatch\n") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}
