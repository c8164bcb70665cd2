package deploy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSurveyExecutable: a fresh Bin gets this executable as an action (run
// only after the whole survey: the same bytes, 0755); surveyed again, or
// from the installed file itself, nothing is to do; another build there is
// a conflict and left as it is; without Self, a missing one is a conflict.
func TestSurveyExecutable(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "build", "boxmaker")
	if err := os.Mkdir(filepath.Dir(self), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, []byte("BUILD 1"), 0o700); err != nil {
		t.Fatal(err)
	}
	plan := Plan{Params: Params{Prefix: "bx-", Bin: filepath.Join(dir, "bin")}}
	dst := filepath.Join(plan.Bin, "boxmaker")
	survey := func(self string) ([]action, []string) {
		var conflicts []string
		a := &applier{plan: plan, opts: ApplyOptions{Self: self}}
		acts := a.surveyExecutable(func(f string, args ...any) { conflicts = append(conflicts, fmt.Sprintf(f, args...)) })
		return acts, conflicts
	}

	if acts, c := survey(""); len(acts) != 0 || len(c) != 1 || !strings.Contains(c[0], dst+" is not installed") {
		t.Errorf("no Self, nothing there: %v, %q", acts, c)
	}
	acts, c := survey(self)
	if len(c) != 0 || len(acts) != 1 || acts[0].what != "install "+self+" as "+dst+" (root's, 0755)" {
		t.Fatalf("nothing there: %v, %q", acts, c)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the survey wrote %s: %v", dst, err)
	}
	if err := acts[0].do(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	fi, _ := os.Stat(dst)
	if string(got) != "BUILD 1" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("%s is %q, %v", dst, got, fi.Mode())
	}
	for _, from := range []string{self, dst, ""} {
		if acts, c := survey(from); len(acts) != 0 || len(c) != 0 {
			t.Errorf("again from %q: %v, %q", from, acts, c)
		}
	}
	if err := os.WriteFile(self, []byte("BUILD 2"), 0o700); err != nil {
		t.Fatal(err)
	}
	if acts, c := survey(self); len(acts) != 0 || len(c) != 1 || !strings.Contains(c[0], "is another build of boxmaker") {
		t.Errorf("another build: %v, %q", acts, c)
	}
	if got, _ := os.ReadFile(dst); string(got) != "BUILD 1" {
		t.Errorf("another build replaced %s: %q", dst, got)
	}
	if left, _ := filepath.Glob(filepath.Join(plan.Bin, ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
