package deploy_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"boxmaker/deploy"
	"boxmaker/deploy/deploytest"
)

// Issue 29, class 3: deploy apply attacked by a local user who can write a
// directory above what apply makes. Whoever can write a parent can rename
// what apply made and put their own directory or a link in its place
// (between apply's mkdir and its chown and chmod, or any time after), and
// whoever can write the executable is every role. Apply must refuse such
// a place before changing anything. A root-owned sticky directory (/tmp,
// /var/tmp) is safe: only an entry's owner may rename or remove it there.
func TestApplyRefusesAPlaceOthersCouldSwap(t *testing.T) {
	type weakness struct {
		name   string
		weaken func(t *testing.T, dir, exe string, mallory int)
		safe   bool
	}
	chmod := func(mode os.FileMode) func(t *testing.T, dir, exe string, mallory int) {
		return func(t *testing.T, dir, exe string, mallory int) {
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	weaknesses := []weakness{
		{"its parent is another user's", func(t *testing.T, dir, exe string, mallory int) {
			if err := os.Chown(dir, mallory, -1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"its parent is group-writable", chmod(0o775), false},
		{"its parent is world-writable", chmod(0o777), false},
		{"its parent is world-writable and sticky, root's", chmod(0o777 | os.ModeSticky), true},
	}
	fields := []string{"home", "etc", "bin", "unit-dir", "tmpfiles-dir"}
	type row struct {
		name  string
		field string
		w     weakness
	}
	var rows []row
	for _, f := range fields {
		for _, w := range weaknesses {
			if w.safe && f != "home" {
				continue // one safe row is enough: each apply that succeeds takes seconds
			}
			rows = append(rows, row{f + ": " + w.name, f, w})
		}
	}
	for _, w := range []weakness{
		{"the executable is another user's", func(t *testing.T, dir, exe string, mallory int) {
			if err := os.Chown(exe, mallory, -1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the executable is group-writable", func(t *testing.T, dir, exe string, mallory int) {
			if err := os.Chmod(exe, 0o775); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the executable is world-writable", func(t *testing.T, dir, exe string, mallory int) {
			if err := os.Chmod(exe, 0o757); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		rows = append(rows, row{"bin: " + w.name, "exe", w})
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			root := deploytest.Root(t, "/bin/true")
			params := deploytest.Params(t, root)
			open := filepath.Join(root, "open")
			if err := os.Mkdir(open, 0o755); err != nil {
				t.Fatal(err)
			}
			weak := open
			in := filepath.Join(open, tc.field)
			switch tc.field {
			case "home":
				params.Home = in
			case "etc":
				params.Etc = in
			case "bin", "unit-dir", "tmpfiles-dir", "exe":
				if err := os.Mkdir(in, 0o755); err != nil {
					t.Fatal(err)
				}
				switch tc.field {
				case "bin", "exe":
					params.Bin = in
					b, _ := os.ReadFile(filepath.Join(root, "bin", "boxmaker"))
					if err := os.WriteFile(filepath.Join(in, "boxmaker"), b, 0o755); err != nil {
						t.Fatal(err)
					}
				case "unit-dir":
					params.UnitDir = in
				case "tmpfiles-dir":
					params.TmpfilesDir = in
				}
			}
			plan := deploy.New(params)
			mallory := plan.Prefix + "mallory"
			t.Cleanup(func() { deploytest.RemoveAccounts(t, plan, mallory) })
			mustRun(t, "useradd", "--no-create-home", mallory)
			u, err := user.Lookup(mallory)
			if err != nil {
				t.Fatal(err)
			}
			uid, _ := strconv.Atoi(u.Uid)
			exe := filepath.Join(plan.Bin, "boxmaker")
			tc.w.weaken(t, weak, exe, uid)
			before := snapshot(t, root)
			var out bytes.Buffer
			err = deploy.Apply(plan, deploy.ApplyOptions{Out: &out})
			if tc.w.safe {
				if err != nil {
					t.Fatalf("Apply under a root-owned sticky directory = %v", err)
				}
				return
			}
			named := weak + " is "
			if tc.field == "exe" {
				named = exe + " is "
			}
			if !errors.Is(err, deploy.ErrConflict) || !strings.Contains(err.Error(), "see docs/runbook.md#deploy-unsafe-path") ||
				!strings.Contains(err.Error(), named) ||
				!strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("Apply = %v (%d lines of changes), want a conflict naming the unsafe place (see docs/runbook.md#deploy-unsafe-path)", err, strings.Count(out.String(), "\n"))
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

// A link on the way to the executable leads through other directories:
// an installed boxmaker that is a link into a directory someone else may
// write is refused like the executable itself.
func TestApplyRefusesAnExecutableLinkedFromAnOpenPlace(t *testing.T) {
	root := deploytest.Root(t, "/bin/true")
	plan := deploy.New(deploytest.Params(t, root))
	t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
	store := filepath.Join(root, "store")
	if err := os.Mkdir(store, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(store, 0o777); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(plan.Bin, "boxmaker")
	if err := os.Rename(exe, filepath.Join(store, "boxmaker")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(store, "boxmaker"), exe); err != nil {
		t.Fatal(err)
	}
	err := deploy.Apply(plan, deploy.ApplyOptions{})
	if !errors.Is(err, deploy.ErrConflict) || !strings.Contains(err.Error(), "the directory "+store+" is writable by its group or by everyone (mode 0777)") {
		t.Fatalf("Apply = %v", err)
	}
}

// A pair directory the plan's own (owner, group, mode 2710) but with a
// POSIX ACL: an access ACL whose mask is --x shows as 2710 and lets its
// named user search the directory, and a default ACL hands that user each
// socket the listener makes inside. A second apply must refuse it, not
// call the system the plan.
func TestApplyRefusesAPairDirectoryWithAnACL(t *testing.T) {
	root := deploytest.Root(t, "/bin/true")
	plan := deploy.New(deploytest.Params(t, root))
	mallory := plan.Prefix + "mallory"
	t.Cleanup(func() { deploytest.RemoveAccounts(t, plan, mallory) })
	if err := deploy.Apply(plan, deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "useradd", "--no-create-home", mallory)
	u, err := user.Lookup(mallory)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.Atoi(u.Uid)
	dir := filepath.Join(plan.Home, "run", "owner-broker")
	for _, acl := range []struct {
		name string
		perm uint16
	}{{"system.posix_acl_access", 1}, {"system.posix_acl_default", 6}} {
		if err := unix.Lsetxattr(dir, acl.name, posixACL(0o7, uint32(id), acl.perm, 0), 0); err != nil {
			t.Fatalf("set %s on %s: %v", acl.name, dir, err)
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o710 {
		t.Fatalf("with the ACL %s shows mode %o, want it to look like the plan's 0710", dir, got)
	}
	err = deploy.Apply(plan, deploy.ApplyOptions{})
	if !errors.Is(err, deploy.ErrConflict) || !strings.Contains(err.Error(), dir+" has a POSIX ACL (system.posix_acl_access)") ||
		!strings.Contains(err.Error(), dir+" has a POSIX ACL (system.posix_acl_default)") {
		t.Fatalf("Apply = %v", err)
	}
}

// posixACL is the xattr form of an ACL (the kernel's posix_acl_xattr):
// owner ownerPerm, one named user with perm, the owning group and the mask
// at perm and groupPerm, others at nothing.
func posixACL(ownerPerm uint16, uid uint32, perm, groupPerm uint16) []byte {
	const undefined = 0xffffffff
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, ownerPerm, undefined}, {0x02, perm, uid}, {0x04, groupPerm | 1, undefined}, {0x10, perm | 1, undefined}, {0x20, groupPerm, undefined}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}
