package deploy_test

import (
	"bytes"
	"fmt"
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

// TestApplyRemoveApplyPurge runs the whole life of a deployment for real
// (users, groups, files; systemctl stood in for): apply; remove, which
// takes the units, links and executable away and keeps the state, the
// configuration and the accounts that own them; apply again, which finds
// the state as the plan wants it (the audit log still its writer's) and
// makes only what remove took; remove --purge, which deletes the state and
// then the users and groups (the tools user's subordinate ranges with it),
// never the owner's account; and remove --purge again, with nothing left.
func TestApplyRemoveApplyPurge(t *testing.T) {
	root := deploytest.Root(t, "/bin/true")
	plan := deploy.New(deploytest.Params(t, root))
	t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
	owner := plan.Prefix + "alice"
	mustRun(t, "useradd", "--no-create-home", owner)
	t.Cleanup(func() { exec.Command("userdel", owner).Run() })
	if err := deploy.Apply(plan, deploy.ApplyOptions{Owners: []string{owner}}); err != nil {
		t.Fatal(err)
	}
	// State as brokerd would write it.
	audit := filepath.Join(plan.Home, "audit", "log")
	writeFile(t, audit, "the chain\n", 0o640)
	uid, gid, err := deploy.IDs(plan.UserFor("brokerd"), plan.Prefix+"owner")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(audit, uid, gid); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(plan.Etc, "grants", "g.toml"), "grant\n", 0o640)

	f := newFakeSystemd()
	f.pass = true
	f.running(plan)
	exe := filepath.Join(plan.Bin, "boxmaker")
	out, err := runRemove(t, plan, f, deploy.RemoveOptions{Self: exe, Mountinfo: "/proc/self/mountinfo"})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "\nkept the users "+plan.UserFor("loopd")+", ") || !strings.HasSuffix(out, "\n17 changes made\n") {
		t.Errorf("remove said:\n%s", out)
	}
	for _, p := range plan.Paths {
		_, err := os.Lstat(p.Path)
		gone := p.Kind == deploy.KindLink || filepath.Dir(p.Path) == plan.UnitDir || filepath.Dir(p.Path) == plan.TmpfilesDir
		if gone != (err != nil) && p.Content != deploy.ContentOwner {
			t.Errorf("%s: after remove, %v (want it gone: %v)", p.Path, err, gone)
		}
	}
	if _, err := os.Lstat(exe); err == nil {
		t.Errorf("%s is still there", exe)
	}
	for _, u := range plan.Users {
		if _, err := user.Lookup(u.Name); err != nil {
			t.Errorf("remove without --purge deleted %s: %v", u.Name, err)
		}
	}
	if st, err := os.Stat(audit); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != uid {
		t.Errorf("the audit log after remove: %v, %v", st, err)
	}

	var again bytes.Buffer
	if err := deploy.Apply(plan, deploy.ApplyOptions{Owners: []string{owner}, Self: "/bin/true", Out: &again}); err != nil {
		t.Fatalf("apply after remove: %v", err)
	}
	if s := again.String(); !strings.Contains(s, "install /bin/true as "+exe) || strings.Contains(s, "create user") ||
		strings.Contains(s, "create directory") || !strings.HasSuffix(s, "\n12 changes made\n") {
		t.Errorf("apply after remove said:\n%s", s)
	}
	checkSystemIsPlan(t, plan, owner)
	if b, _ := os.ReadFile(audit); string(b) != "the chain\n" {
		t.Errorf("the audit log after apply: %q", b)
	}

	// A file the plan did not make, left by --purge, and loopd's: said
	// with the number it is left owned by.
	extra := filepath.Join(plan.Etc, "notes.bak")
	writeFile(t, extra, "mine\n", 0o600)
	loopd, _, _ := deploy.IDs(plan.UserFor("loopd"), plan.UserFor("loopd"))
	if err := os.Chown(extra, loopd, 0); err != nil {
		t.Fatal(err)
	}
	f = newFakeSystemd()
	f.pass = true
	f.running(plan)
	out, err = runRemove(t, plan, f, deploy.RemoveOptions{Purge: true, Self: exe, Mountinfo: "/proc/self/mountinfo"})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("remove --purge said:\n%s", out)
	for _, line := range []string{
		fmt.Sprintf("\nkept %s: it holds notes.bak (%s's: uid %d once that account is deleted), which the plan did not make", plan.Etc, plan.UserFor("loopd"), loopd),
		"\nkept any file a tool container wrote in a granted folder: it stays owned by a uid of " + plan.UserFor("tools") + "'s subordinate range [",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in:\n%s", line, out)
		}
	}
	for _, line := range []string{"\n  " + plan.Home + "/tools: ", "\ndelete " + plan.Home + "/audit and all it holds\n", "\ndelete " + plan.Home + "\n",
		"\ndelete user " + plan.UserFor("tools") + " and its group " + plan.UserFor("tools") + "\n",
		"\ndelete group " + plan.Prefix + "owner (its members " + owner + " keep their accounts)\n", "\ndelete group " + plan.Prefix + "loop-broker\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in:\n%s", line, out)
		}
	}
	if _, err := os.Lstat(plan.Home); err == nil {
		t.Errorf("%s is still there after --purge", plan.Home)
	}
	if entries, _ := os.ReadDir(plan.Etc); len(entries) != 1 {
		t.Errorf("%s holds %v after --purge, want only notes.bak", plan.Etc, entries)
	}
	for _, u := range plan.Users {
		if _, err := user.Lookup(u.Name); err == nil {
			t.Errorf("user %s is still there after --purge", u.Name)
		}
	}
	for _, g := range plan.Groups {
		if _, err := user.LookupGroup(g.Name); err == nil {
			t.Errorf("group %s is still there after --purge", g.Name)
		}
	}
	if _, err := user.Lookup(owner); err != nil {
		t.Errorf("--purge deleted the owner's account: %v", err)
	}
	for _, file := range []string{"/etc/subuid", "/etc/subgid"} {
		if b, _ := os.ReadFile(file); strings.Contains("\n"+string(b), "\n"+plan.UserFor("tools")+":") {
			t.Errorf("%s still gives %s a range:\n%s", file, plan.UserFor("tools"), b)
		}
	}

	f.ran = nil
	out, err = runRemove(t, plan, f, deploy.RemoveOptions{Purge: true, Self: exe, Mountinfo: "/proc/self/mountinfo"})
	if err != nil || out != "kept "+plan.Etc+": it holds notes.bak, which the plan did not make (delete them, and it, by hand)\n"+
		"nothing to remove: no unit, link, executable, state, user or group of the plan is left\n" || len(f.ran) != 0 {
		t.Errorf("the second --purge: %v, ran %v:\n%s", err, f.ran, out)
	}
}

// TestRemovePurgeRefusesAnAccountNotThePlans: an account of a plan name
// that apply would not take as its own, a person whose primary group is
// the owner group, or a stranger in a pair group stops --purge before it
// changes anything: remove deletes only the accounts apply made.
func TestRemovePurgeRefusesAnAccountNotThePlans(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, plan deploy.Plan)
		want    string
	}{
		{"a user of a plan name that is not the plan's", func(t *testing.T, plan deploy.Plan) {
			mustRun(t, "usermod", "--comment", "someone else", plan.UserFor("gatewayd"))
		}, "user PREFIXgatewayd exists (comment \"someone else\", home /nonexistent) and is not the plan's"},
		{"a person in the owner group by their primary group", func(t *testing.T, plan deploy.Plan) {
			mustRun(t, "useradd", "--no-create-home", "--gid", plan.Prefix+"owner", plan.Prefix+"bob")
		}, "group PREFIXowner is the primary group of the user PREFIXbob"},
		{"a stranger in a pair group", func(t *testing.T, plan deploy.Plan) {
			mustRun(t, "useradd", "--no-create-home", plan.Prefix+"bob")
			mustRun(t, "gpasswd", "--add", plan.Prefix+"bob", plan.Prefix+"loop-infer")
		}, "group PREFIXloop-infer has the member PREFIXbob, whom the plan does not name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := deploytest.Root(t, "/bin/true")
			plan := deploy.New(deploytest.Params(t, root))
			t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
			if err := deploy.Apply(plan, deploy.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { exec.Command("userdel", plan.Prefix+"bob").Run() })
			tc.prepare(t, plan)
			before := snapshot(t, root)
			f := newFakeSystemd()
			f.pass = true
			out, err := runRemove(t, plan, f, deploy.RemoveOptions{Purge: true, Self: filepath.Join(plan.Bin, "boxmaker")})
			want := strings.ReplaceAll(tc.want, "PREFIX", plan.Prefix)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("Remove = %v, want a conflict naming %q", err, want)
			}
			if out != "" || len(f.ran) != 0 || snapshot(t, root) != before {
				t.Errorf("a refused remove printed %q, ran %v or changed files", out, f.ran)
			}
			for _, u := range plan.Users {
				if _, err := user.Lookup(u.Name); err != nil {
					t.Errorf("a refused remove deleted %s", u.Name)
				}
			}
		})
	}
}
