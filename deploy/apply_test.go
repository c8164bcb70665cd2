package deploy_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/deploy"
	"boxmaker/deploy/deploytest"
)

// A fresh apply makes everything the plan lists, exactly; a second apply
// changes nothing; --dry-run changes nothing and says what it would do.
func TestApplyTwiceChangesNothingTheSecondTime(t *testing.T) {
	root := deploytest.Root(t, "/bin/true")
	plan := deploy.New(deploytest.Params(t, root))
	t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
	owner := plan.Prefix + "alice"
	if out, err := exec.Command("useradd", "--no-create-home", owner).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", owner).Run() })

	var dry bytes.Buffer
	if err := deploy.Apply(plan, deploy.ApplyOptions{DryRun: true, Owners: []string{owner}, Out: &dry}); err != nil {
		t.Fatal(err)
	}
	if _, err := user.Lookup(plan.UserFor("brokerd")); err == nil {
		t.Fatal("--dry-run created a user")
	}
	if _, err := os.Stat(plan.Home); err == nil {
		t.Fatal("--dry-run created the home")
	}
	if !strings.Contains(dry.String(), "would create user "+plan.UserFor("loopd")) || !strings.Contains(dry.String(), "nothing was changed (--dry-run)") {
		t.Fatalf("--dry-run said:\n%s", dry.String())
	}

	var first, second bytes.Buffer
	if err := deploy.Apply(plan, deploy.ApplyOptions{Owners: []string{owner}, Out: &first}); err != nil {
		t.Fatal(err)
	}
	// Every line the dry run announced was done, in the same order.
	if got, want := first.String(), strings.ReplaceAll(dry.String(), "would ", ""); strings.Split(got, "\n")[0] != strings.Split(want, "\n")[0] ||
		strings.Count(got, "\n") != strings.Count(want, "\n") {
		t.Fatalf("apply did:\n%s\nthe dry run said:\n%s", got, dry.String())
	}
	checkSystemIsPlan(t, plan, owner)

	if err := deploy.Apply(plan, deploy.ApplyOptions{Owners: []string{owner}, Out: &second}); err != nil {
		t.Fatal(err)
	}
	if second.String() != "nothing to change: the system is the plan\n" {
		t.Fatalf("the second apply said:\n%s", second.String())
	}
}

// checkSystemIsPlan compares every path, user and group with the plan.
func checkSystemIsPlan(t *testing.T, plan deploy.Plan, owner string) {
	t.Helper()
	for _, p := range plan.Paths {
		fi, err := os.Lstat(p.Path)
		if p.Content == deploy.ContentOwner {
			if err == nil {
				t.Errorf("%s: deploy wrote a file only the owner writes", p.Path)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", p.Path, err)
			continue
		}
		if p.Kind == deploy.KindLink {
			if target, _ := os.Readlink(p.Path); target != p.Target {
				t.Errorf("%s -> %q, want %q", p.Path, target, p.Target)
			}
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		u, _ := user.LookupId(itoa(st.Uid))
		g, _ := user.LookupGroupId(itoa(st.Gid))
		mode := st.Mode & 0o7777
		if got := fmtMode(mode) + " " + u.Username + ":" + g.Name; got != p.Mode+" "+p.Owner+":"+p.Group {
			t.Errorf("%s is %s, want %s %s:%s", p.Path, got, p.Mode, p.Owner, p.Group)
		}
		if p.Kind == deploy.KindFile {
			if b, _ := os.ReadFile(p.Path); string(b) != p.Text {
				t.Errorf("%s: content differs from the plan's", p.Path)
			}
		}
	}
	for _, u := range plan.Users {
		got, err := user.Lookup(u.Name)
		if err != nil {
			t.Errorf("user %s: %v", u.Name, err)
			continue
		}
		if got.HomeDir != u.Home || got.Name != "boxmaker "+u.Role {
			t.Errorf("user %s: home %s, comment %q", u.Name, got.HomeDir, got.Name)
		}
	}
	grp, err := user.LookupGroup(plan.Prefix + "owner")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := user.Lookup(owner)
	ids, _ := o.GroupIds()
	if !contains(ids, grp.Gid) {
		t.Errorf("%s is not in the owner group", owner)
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), "\n"+plan.UserFor("tools")+":") && !strings.HasPrefix(string(b), plan.UserFor("tools")+":") {
			t.Errorf("%s has no range for %s", f, plan.UserFor("tools"))
		}
	}
}

// Anything that exists and differs from the plan is refused, with every
// conflict named, and nothing at all is changed.
func TestApplyRefusesWhatItDidNotMake(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, plan deploy.Plan)
		want    string
	}{
		{"a user of that name that is not the plan's", func(t *testing.T, plan deploy.Plan) {
			mustRun(t, "useradd", "--no-create-home", "--comment", "someone else", plan.UserFor("gatewayd"))
		}, "user " + "PREFIXgatewayd exists (comment \"someone else\""},
		{"a directory with another mode", func(t *testing.T, plan deploy.Plan) {
			if err := os.MkdirAll(plan.Home, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "home is 0755 root:root; the plan says 0711 root:root"},
		{"a unit file that differs", func(t *testing.T, plan deploy.Plan) {
			if err := os.WriteFile(filepath.Join(plan.UnitDir, plan.UserFor("loopd")+".service"), []byte("[Service]\nUser=root\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "loopd.service exists and its content differs from the plan's"},
		{"a link to something else", func(t *testing.T, plan deploy.Plan) {
			if err := os.Symlink("/bin/sh", filepath.Join(plan.Bin, "bxctl")); err != nil {
				t.Fatal(err)
			}
		}, "bin/bxctl exists and is not a link to boxmaker"},
		{"a missing owner", func(t *testing.T, plan deploy.Plan) {}, "owner nobody-at-all: no such user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := deploytest.Root(t, "/bin/true")
			plan := deploy.New(deploytest.Params(t, root))
			t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
			tc.prepare(t, plan)
			before := snapshot(t, root)
			owners := []string{}
			if strings.Contains(tc.want, "nobody-at-all") {
				owners = []string{"nobody-at-all"}
			}
			var out bytes.Buffer
			err := deploy.Apply(plan, deploy.ApplyOptions{Owners: owners, Out: &out})
			want := strings.ReplaceAll(tc.want, "PREFIX", plan.Prefix)
			if !errors.Is(err, deploy.ErrConflict) || !strings.Contains(err.Error(), want) ||
				!strings.Contains(err.Error(), "nothing was changed") || !strings.HasSuffix(err.Error(), "see docs/runbook.md#deploy-conflict") {
				t.Fatalf("Apply = %v, want a conflict naming %q", err, want)
			}
			if out.Len() != 0 {
				t.Fatalf("a refused apply printed changes:\n%s", out.String())
			}
			if after := snapshot(t, root); after != before {
				t.Fatalf("a refused apply changed files:\nbefore %s\nafter  %s", before, after)
			}
			if _, err := user.LookupGroup(plan.Prefix + "owner"); err == nil {
				t.Fatal("a refused apply created a group")
			}
		})
	}
}

// An apply cut short (the groups made, or the users made too but not yet
// in their groups) is finished by the next one, not refused: what is
// missing is the plan's own.
func TestApplyFinishesAnApplyCutShort(t *testing.T) {
	for _, usersToo := range []bool{false, true} {
		t.Run(map[bool]string{false: "groups made", true: "users made too"}[usersToo], func(t *testing.T) {
			root := deploytest.Root(t, "/bin/true")
			plan := deploy.New(deploytest.Params(t, root))
			t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
			for _, g := range plan.Groups {
				mustRun(t, "groupadd", "--system", g.Name)
			}
			if usersToo {
				for _, u := range plan.Users {
					mustRun(t, "useradd", "--system", "--no-create-home", "--home-dir", u.Home, "--shell", "/usr/sbin/nologin",
						"--gid", u.Name, "--comment", "boxmaker "+u.Role, u.Name)
				}
			}
			var out bytes.Buffer
			if err := deploy.Apply(plan, deploy.ApplyOptions{Out: &out}); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if usersToo && !strings.Contains(out.String(), "add "+plan.UserFor("loopd")+" to the group "+plan.Prefix+"loop-broker\n") {
				t.Fatalf("apply did not add loopd to its pair group:\n%s", out.String())
			}
			for _, u := range plan.Users {
				got, err := user.Lookup(u.Name)
				if err != nil {
					t.Fatal(err)
				}
				ids, _ := got.GroupIds()
				for _, g := range u.Groups {
					grp, err := user.LookupGroup(g)
					if err != nil || !contains(ids, grp.Gid) {
						t.Errorf("%s is not in %s", u.Name, g)
					}
				}
			}
			out.Reset()
			if err := deploy.Apply(plan, deploy.ApplyOptions{Out: &out}); err != nil || out.String() != "nothing to change: the system is the plan\n" {
				t.Fatalf("the next apply: %v\n%s", err, out.String())
			}
		})
	}
}

// A member the plan does not name, in a pair group, is refused.
func TestApplyRefusesAStrangerInAPairGroup(t *testing.T) {
	root := deploytest.Root(t, "/bin/true")
	plan := deploy.New(deploytest.Params(t, root))
	stranger := plan.Prefix + "mallory"
	t.Cleanup(func() { deploytest.RemoveAccounts(t, plan, stranger) })
	mustRun(t, "useradd", "--no-create-home", stranger)
	mustRun(t, "groupadd", "--system", plan.Prefix+"loop-broker")
	mustRun(t, "gpasswd", "--add", stranger, plan.Prefix+"loop-broker")
	err := deploy.Apply(plan, deploy.ApplyOptions{})
	if !errors.Is(err, deploy.ErrConflict) || !strings.Contains(err.Error(), "group "+plan.Prefix+"loop-broker exists with members ["+stranger+"]") {
		t.Fatalf("Apply = %v", err)
	}
}
