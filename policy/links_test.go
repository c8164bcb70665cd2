package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"boxmaker/policy"
)

// TestGrantLinksAreProblems: a grant file is read from the directory
// itself, never through a symbolic link (issue 29, class 1). A link could
// name a file that someone other than the grants directory's owner can
// write, or be pointed elsewhere between two reads; a dangling one would
// silently drop a grant. Each link, whatever it leads to, is a problem, so
// the whole set is invalid and every call is refused.
func TestGrantLinksAreProblems(t *testing.T) {
	good := head + "[constraints]\npaths = [\"/a\"]\n"
	elsewhere := filepath.Join(t.TempDir(), "real.toml")
	if err := os.WriteFile(elsewhere, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"to a grant":    elsewhere,
		"dangling":      filepath.Join(t.TempDir(), "gone.toml"),
		"to a sibling":  "ok.toml",
		"to /dev/zero":  "/dev/zero",
		"to the folder": ".",
	} {
		t.Run(name, func(t *testing.T) {
			dir := grantsDir(t, map[string]string{"ok.toml": good})
			if err := os.Symlink(target, filepath.Join(dir, "l.toml")); err != nil {
				t.Fatal(err)
			}
			_, ps, err := policy.LoadGrants(dir, nil)
			if err != nil || len(ps) != 1 || ps[0].File != "l.toml" ||
				ps[0].Problem != "cannot be read: it is a symbolic link; a grant is read only from a regular file in the grants directory itself" {
				t.Fatalf("problems %v, err %v", ps, err)
			}
		})
	}
}
