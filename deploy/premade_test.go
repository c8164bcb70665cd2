package deploy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/deploy"
	"boxmaker/deploy/deploytest"
)

// Issue 29, class 3: a pair directory someone else made before apply (or
// replaced since), for apply to reuse: a link to a directory that has the
// plan's owner, group and mode; the directory made by the pair's client
// instead of its listener (it could then swap the socket); a link to it.
// Each is refused on the next apply, never reused.
func TestApplyRefusesAPairDirectoryMadeByAnother(t *testing.T) {
	root := deploytest.Root(t, "/bin/true")
	plan := deploy.New(deploytest.Params(t, root))
	t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
	if err := deploy.Apply(plan, deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(plan.Home, "run")
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	// like makes a directory at path with the owner, group and mode of
	// the plan's pair directory pair, made by owner instead when given.
	like := func(t *testing.T, path, pair, owner string) {
		var want deploy.Path
		for _, p := range plan.Paths {
			if p.Path == filepath.Join(run, pair) {
				want = p
			}
		}
		if owner != "" {
			want.Owner = owner
		}
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		mustRun(t, "chown", want.Owner+":"+want.Group, path)
		mustRun(t, "chmod", want.Mode, path)
	}
	for _, tc := range []struct {
		name, pair string
		make       func(t *testing.T, path string)
		want       string
	}{
		{"a link to a directory like the plan's", "loop-broker", func(t *testing.T, path string) {
			like(t, filepath.Join(elsewhere, "lb"), "loop-broker", "")
			if err := os.Symlink(filepath.Join(elsewhere, "lb"), path); err != nil {
				t.Fatal(err)
			}
		}, "exists and is not a dir"},
		{"made by the client, loopd", "loop-broker", func(t *testing.T, path string) {
			like(t, path, "loop-broker", plan.UserFor("loopd"))
		}, "is 2710 " + plan.UserFor("loopd") + ":" + plan.Prefix + "loop-broker; the plan says 2710 " + plan.UserFor("brokerd")},
		{"brokerd's share made by the tools user", "tools-broker", func(t *testing.T, path string) {
			like(t, path, "tools-broker", plan.UserFor("tools"))
		}, "is 2710 " + plan.UserFor("tools") + ":" + plan.UserFor("tools") + "; the plan says 2710 " + plan.UserFor("brokerd")},
		{"a link to the listener's own other directory", "owner-broker", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(run, "loop-broker"), path); err != nil {
				t.Fatal(err)
			}
		}, "exists and is not a dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(run, tc.pair)
			saved := path + ".saved"
			if err := os.Rename(path, saved); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				os.RemoveAll(path)
				if err := os.Rename(saved, path); err != nil {
					t.Fatal(err)
				}
			})
			tc.make(t, path)
			err := deploy.Apply(plan, deploy.ApplyOptions{})
			if !errors.Is(err, deploy.ErrConflict) || !strings.Contains(err.Error(), path+" "+tc.want) {
				t.Fatalf("Apply = %v, want a conflict: %s %s", err, path, tc.want)
			}
		})
	}
}
