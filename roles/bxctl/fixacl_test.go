package bxctl

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"boxmaker/policy"
	"boxmaker/roles/bxctl/internal/posixacl"
)

// fixTree is a stand-in host laid out in a temporary directory: an
// owner's home of mode 0700 (Debian 12's), folders in it, and folders
// the fix must refuse. The uids are made up: the fix takes them as
// parameters, and root (which the tests run as) may own files by any uid.
type fixTree struct {
	root, home string
	p          fixParams
}

const (
	ownerUID   = 1000
	toolsUID   = 998
	brokerUID  = 997
	toolsHost  = 231069 // the tools' uid on the host: subuid start + 65533
	toolsGroup = 231069
)

func mkdirOwned(t *testing.T, path string, uid int, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func newFixTree(t *testing.T) *fixTree {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test owns files by other uids and sets their ACLs: run it as root")
	}
	root := t.TempDir()
	// t.TempDir's folders are 0700: let everyone search them, as /home's
	// parents are on a host.
	for d := root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ft := &fixTree{root: root, home: filepath.Join(root, "home", "kyle")}
	os.Mkdir(filepath.Join(root, "home"), 0o755)
	mkdirOwned(t, ft.home, ownerUID, 0o700)
	for _, d := range []string{"notes", "docs", "docs/ref", "victim", "boxmaker"} {
		mkdirOwned(t, filepath.Join(ft.home, d), ownerUID, 0o700)
	}
	os.Chmod(filepath.Join(ft.home, "docs"), 0o755)
	mkdirOwned(t, filepath.Join(ft.home, "rootdir"), 0, 0o700)
	os.Mkdir(filepath.Join(root, "elsewhere"), 0o700)
	for link, to := range map[string]string{"link": "victim", "ldocs": "docs"} {
		if err := os.Symlink(filepath.Join(ft.home, to), filepath.Join(ft.home, link)); err != nil {
			t.Fatal(err)
		}
	}
	protected, err := policy.NewProtected([]policy.ProtectedPath{{Path: filepath.Join(ft.home, "boxmaker"), What: "BOXMAKER_HOME"}})
	if err != nil {
		t.Fatal(err)
	}
	ft.p = fixParams{
		container: principal{"the tools' uid", toolsHost, []uint32{toolsGroup}},
		walkers:   []principal{{"boxmaker-tools", toolsUID, []uint32{toolsUID}}, {"boxmaker-brokerd", brokerUID, []uint32{brokerUID, 50}}},
		owners:    []ownerHome{{"kyle", ownerUID, ft.home}},
		protected: protected,
	}
	return ft
}

func xattrHex(t *testing.T, path, kind string) string {
	t.Helper()
	buf := make([]byte, 512)
	n, err := unix.Lgetxattr(path, kind, buf)
	if err == unix.ENODATA {
		return "-"
	}
	if err != nil {
		t.Fatalf("%s %s: %v", path, kind, err)
	}
	return hex.EncodeToString(buf[:n])
}

func (ft *fixTree) run(t *testing.T, dry bool, targets ...fixTarget) (fixResult, string) {
	t.Helper()
	var out bytes.Buffer
	p := ft.p
	p.dryRun = dry
	r := fixACLs(p, targets, &out)
	return r, strings.ReplaceAll(out.String(), ft.root, "ROOT")
}

// TestFixACLs: a writable folder in a 0700 home gets the tools' uid in its
// access and default ACLs and the home gets search for the tools user
// and brokerd's; a read-only folder gets r-x; each refusal names its
// reason and leaves its path as it was; a second run changes nothing.
func TestFixACLs(t *testing.T) {
	ft := newFixTree(t)
	h := func(rel string) string { return filepath.Join(ft.home, rel) }
	targets := []fixTarget{
		{h("boxmaker/x"), []string{"p"}, true},
		{h("docs/ref"), []string{"r"}, false},
		{h("ldocs/ref"), []string{"l2"}, false},
		{h("link"), []string{"l"}, true},
		{h("missing"), []string{"m"}, true},
		{h("notes"), []string{"w", "w2"}, true},
		{h("rootdir"), []string{"o"}, true},
		{ft.home, []string{"hm"}, true},
		{filepath.Join(ft.root, "elsewhere"), []string{"e"}, true},
	}
	r, out := ft.run(t, false, targets...)
	see := "; see docs/runbook.md#grant-fix-refused\n"
	want := "ROOT/home/kyle/boxmaker/x (grant p): refused: \"ROOT/home/kyle/boxmaker/x\" lies inside BOXMAKER_HOME (ROOT/home/kyle/boxmaker): no grant may reach boxmaker's own files" + see +
		"ROOT/home/kyle: access ACL: added u:998:--x, added u:997:--x; mask --x\n" +
		"ROOT/home/kyle/docs/ref: access ACL: added u:231069:r-x; mask r-x\n" +
		"ROOT/home/kyle/ldocs/ref (grant l2): refused: ROOT/home/kyle/ldocs is a symlink (--fix never follows one)" + see +
		"ROOT/home/kyle/link (grant l): refused: ROOT/home/kyle/link is a symlink (--fix never follows one)" + see +
		"ROOT/home/kyle/missing (grant m): refused: ROOT/home/kyle/missing does not exist" + see +
		"ROOT/home/kyle/notes: access ACL: added u:231069:rwx; mask rwx\n" +
		"ROOT/home/kyle/notes: default ACL: set to u::rwx,u:1000:rwx,u:231069:rwx,g::---,m::rwx,o::--- (it had none)\n" +
		"ROOT/home/kyle/rootdir (grant o): refused: ROOT/home/kyle/rootdir is owned by uid 0, not by kyle (uid 1000), whose home it is in" + see +
		"ROOT/home/kyle (grant hm): refused: \"ROOT/home/kyle\" contains BOXMAKER_HOME (ROOT/home/kyle/boxmaker): no grant may reach boxmaker's own files" + see +
		"ROOT/elsewhere (grant e): refused: it lies outside every owner's home (ROOT/home/kyle), and --fix changes only folders inside one" + see
	if out != want || r != (fixResult{changes: 4, refused: 7}) {
		t.Errorf("%+v\n%s\nwant\n%s", r, out, want)
	}
	// The bytes, as setfacl would write them (posixacl's fixtures).
	for _, c := range []struct{ path, kind, hex string }{
		{ft.home, posixacl.Access, "0200000001000700ffffffff02000100e503000002000100e603000004000000ffffffff10000100ffffffff20000000ffffffff"},
		{ft.home, posixacl.Default, "-"},
		{h("notes"), posixacl.Access, "0200000001000700ffffffff020007009d86030004000000ffffffff10000700ffffffff20000000ffffffff"},
		{h("notes"), posixacl.Default, "0200000001000700ffffffff02000700e8030000020007009d86030004000000ffffffff10000700ffffffff20000000ffffffff"},
		{h("docs/ref"), posixacl.Access, "0200000001000700ffffffff020005009d86030004000000ffffffff10000500ffffffff20000000ffffffff"},
		{h("docs/ref"), posixacl.Default, "-"},
		{h("docs"), posixacl.Access, "-"}, // 0755: both may search it already
		// Refused: unchanged.
		{h("victim"), posixacl.Access, "-"},
		{h("rootdir"), posixacl.Access, "-"},
		{h("boxmaker"), posixacl.Access, "-"},
		{filepath.Join(ft.root, "elsewhere"), posixacl.Access, "-"},
		{filepath.Join(ft.root, "home"), posixacl.Access, "-"},
	} {
		if got := xattrHex(t, c.path, c.kind); got != c.hex {
			t.Errorf("%s %s: %s, want %s", c.path, c.kind, got, c.hex)
		}
	}
	// Again: only the refusals.
	r, again := ft.run(t, false, targets...)
	var refusals []string
	for _, l := range strings.SplitAfter(want, "\n") {
		if strings.Contains(l, "refused") {
			refusals = append(refusals, l)
		}
	}
	if again != strings.Join(refusals, "") || r.changes != 0 {
		t.Errorf("second run: %+v\n%s", r, again)
	}
}

// TestFixDryRun prints the changes, shared folders once, and makes none.
func TestFixDryRun(t *testing.T) {
	ft := newFixTree(t)
	r, out := ft.run(t, true, fixTarget{filepath.Join(ft.home, "docs/ref"), []string{"r"}, false},
		fixTarget{filepath.Join(ft.home, "notes"), []string{"w"}, true}, fixTarget{filepath.Join(ft.home, "victim"), []string{"v"}, true})
	if r.changes != 6 || r.refused != 0 || strings.Count(out, "ROOT/home/kyle: access ACL") != 1 || strings.Count(out, "dry run: ") != 6 {
		t.Errorf("%+v\n%s", r, out)
	}
	for _, d := range []string{"", "docs/ref", "notes", "victim"} {
		if got := xattrHex(t, filepath.Join(ft.home, d), posixacl.Access); got != "-" {
			t.Errorf("%s changed by a dry run: %s", d, got)
		}
	}
}

// TestFixAboveHome: a folder above the home that the tools user cannot
// search is not changed; the path is refused.
func TestFixAboveHome(t *testing.T) {
	ft := newFixTree(t)
	os.Chmod(filepath.Join(ft.root, "home"), 0o750)
	r, out := ft.run(t, false, fixTarget{filepath.Join(ft.home, "notes"), []string{"w"}, true})
	want := "ROOT/home/kyle/notes (grant w): refused: ROOT/home does not let boxmaker-tools (uid 998) search it, and --fix changes nothing outside an owner's home; see docs/runbook.md#grant-fix-refused\n"
	if out != want || r.refused != 1 || xattrHex(t, ft.home, posixacl.Access) != "-" {
		t.Errorf("%+v\n%s", r, out)
	}
}

// TestFixHomeItself: a grant of a whole home is refused (its dot files
// would be the tool's to write).
func TestFixHomeItself(t *testing.T) {
	ft := newFixTree(t)
	ft.p.protected, _ = policy.NewProtected(nil)
	r, out := ft.run(t, false, fixTarget{ft.home, []string{"hm"}, true})
	want := "ROOT/home/kyle (grant hm): refused: it is kyle's home itself: grant a folder inside it; see docs/runbook.md#grant-fix-refused\n"
	if out != want || r.refused != 1 || xattrHex(t, ft.home, posixacl.Access) != "-" {
		t.Errorf("%+v\n%s", r, out)
	}
}

// TestFixFiles: a read-only grant of a file gets r-- and no default ACL;
// a file with a second hard link, or a writable grant of a file, is
// refused.
func TestFixFiles(t *testing.T) {
	ft := newFixTree(t)
	f, linked := filepath.Join(ft.home, "docs", "a.txt"), filepath.Join(ft.home, "docs", "b.txt")
	for _, p := range []string{f, linked} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, ownerUID, ownerUID)
	}
	if err := os.Link(linked, filepath.Join(ft.home, "notes", "b2.txt")); err != nil {
		t.Fatal(err)
	}
	r, out := ft.run(t, false, fixTarget{f, []string{"r"}, false}, fixTarget{f, []string{"w"}, true}, fixTarget{linked, []string{"l"}, false})
	want := "ROOT/home/kyle: access ACL: added u:998:--x, added u:997:--x; mask --x\n" +
		"ROOT/home/kyle/docs/a.txt: access ACL: added u:231069:r--; mask r--\n" +
		"ROOT/home/kyle/docs/a.txt (grant w): refused: ROOT/home/kyle/docs/a.txt is not a directory, and a writable grant's path is a folder; see docs/runbook.md#grant-fix-refused\n" +
		"ROOT/home/kyle/docs/b.txt (grant l): refused: ROOT/home/kyle/docs/b.txt has 2 hard links; see docs/runbook.md#grant-fix-refused\n"
	if out != want || r != (fixResult{changes: 2, refused: 2}) {
		t.Errorf("%+v\n%s\nwant\n%s", r, out, want)
	}
	if xattrHex(t, linked, posixacl.Access) != "-" {
		t.Error("the hard-linked file changed")
	}
}
