// Package deploytest makes throwaway deployments for tests: a plan with a
// name prefix of its own and every path under a temporary root, applied as
// root, and removed (users, groups, subordinate ids, files) when the test
// ends. Tests never touch a real deployment.
package deploytest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"testing"

	"boxmaker/deploy"
)

// Params returns parameters with a prefix unique to this process and every
// path under root. The home is kept short: socket paths must fit 107
// bytes.
func Params(t testing.TB, root string) deploy.Params {
	t.Helper()
	p := deploy.Params{Prefix: fmt.Sprintf("bxt%d-", os.Getpid()%100000), Home: filepath.Join(root, "home"),
		Etc: filepath.Join(root, "etc"), Bin: filepath.Join(root, "bin"),
		UnitDir: filepath.Join(root, "units"), TmpfilesDir: filepath.Join(root, "tmpfiles")}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	return p
}

// Root makes a root directory for a throwaway deployment, searchable by
// every user (the role users must reach the home and the binary), with the
// directories the plan expects to exist already: bin (holding a copy of
// exe as boxmaker), units and tmpfiles.
func Root(t testing.TB, exe string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("deploy tests make users and groups: they must run as root (CI does)")
	}
	root, err := os.MkdirTemp("/var/tmp", "bxdeploy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, d := range []string{"bin", "units", "tmpfiles"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if exe != "" {
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "bin", "boxmaker"), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// RemoveAccounts deletes every user and group of the plan that exists (and,
// with the users, their subordinate ids), and the extra users named.
func RemoveAccounts(t testing.TB, plan deploy.Plan, extra ...string) {
	t.Helper()
	for _, name := range extra {
		run(t, "userdel", name)
	}
	for _, u := range plan.Users {
		if _, err := user.Lookup(u.Name); err == nil {
			run(t, "userdel", u.Name)
		}
	}
	for _, g := range plan.Groups {
		if _, err := user.LookupGroup(g.Name); err == nil {
			run(t, "groupdel", g.Name)
		}
	}
}

func run(t testing.TB, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Logf("cleanup: %s %v: %v: %s", name, args, err, out)
	}
}
