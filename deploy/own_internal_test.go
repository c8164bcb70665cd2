package deploy

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 29, class 3: own gives what apply just made its owner and mode.
// Given a link (what someone who swapped the new directory or temporary
// file would leave), it must change neither the link's target nor succeed:
// a root chmod through a planted link makes any file on the system as open
// as the plan's mode (0755 for /etc/boxmaker).
func TestOwnNeverFollowsALink(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range []string{KindDir, KindFile} {
		t.Run(kind, func(t *testing.T) {
			victim := filepath.Join(dir, "victim-"+kind)
			var err error
			if kind == KindDir {
				err = os.Mkdir(victim, 0o700)
			} else {
				err = os.WriteFile(victim, []byte("root's secret\n"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "made-"+kind)
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			a := &applier{}
			err = a.own(Path{Path: link, Kind: kind, Owner: "root", Group: "root", Mode: "0755"})
			fi, serr := os.Stat(victim)
			if serr != nil {
				t.Fatal(serr)
			}
			if fi.Mode().Perm() != 0o700 && fi.Mode().Perm() != 0o600 {
				t.Errorf("own followed the link: %s is now %v", victim, fi.Mode())
			}
			if err == nil {
				t.Errorf("own of a link succeeded")
			}
		})
	}
}
