package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallSelf: a fresh Bin gets this executable (the same bytes,
// 0755); run again, or from the installed file itself, nothing changes;
// another build there is refused and left as it is; a dry run writes
// nothing.
func TestInstallSelf(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "build", "boxmaker")
	if err := os.Mkdir(filepath.Dir(self), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, []byte("BUILD 1"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := Plan{Params: Params{Prefix: "bx-", Bin: filepath.Join(dir, "bin")}}
	dst := filepath.Join(p.Bin, "boxmaker")

	line, err := installSelf(p, self, true)
	if err != nil || line != "would install "+self+" as "+dst+" (root's, 0755)" {
		t.Fatalf("dry: %q, %v", line, err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dry run wrote %s: %v", dst, err)
	}
	if line, err = installSelf(p, self, false); err != nil || line != "install "+self+" as "+dst+" (root's, 0755)" {
		t.Fatalf("install: %q, %v", line, err)
	}
	got, _ := os.ReadFile(dst)
	fi, _ := os.Stat(dst)
	if string(got) != "BUILD 1" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("%s is %q, %v", dst, got, fi.Mode())
	}
	for _, from := range []string{self, dst} {
		if line, err := installSelf(p, from, false); err != nil || line != "" {
			t.Errorf("again from %s: %q, %v", from, line, err)
		}
	}
	if err := os.WriteFile(self, []byte("BUILD 2"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = installSelf(p, self, false)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "is another build of boxmaker") ||
		!strings.HasSuffix(err.Error(), "see docs/runbook.md#deploy-conflict") {
		t.Errorf("another build: %v", err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "BUILD 1" {
		t.Errorf("another build replaced %s: %q", dst, got)
	}
	if left, _ := filepath.Glob(filepath.Join(p.Bin, ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
