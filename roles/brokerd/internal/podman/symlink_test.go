package podman

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chownTree gives a tree to the tools' user (65534), for a writable grant.
func chownTree(t testing.TB, root string) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// outsideDir is a folder no grant names, holding a secret the tools'
// user could read if it were ever mounted.
func outsideDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "outside")
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"secret.txt", "notes/a.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSymlinkAttackEndToEnd is issue 12's attack: a shell call under a
// writable grant on X replaces folders and a file inside X with symlinks
// to a folder outside every grant; later calls under grants on paths
// below X must be refused, never given the symlink's target.
func TestSymlinkAttackEndToEnd(t *testing.T) {
	r := testRuntime(t, nil)
	outside := outsideDir(t)
	x := hostDir(t, true, map[string]string{"f.txt": "mine\n"})
	for _, d := range []string{"sub/notes", "sub2", "deep/mid/notes"} {
		if err := os.MkdirAll(filepath.Join(x, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	chownTree(t, x)
	// brokerd's own files, elsewhere: the calls below go through that
	// check too.
	r.Protect([]string{t.TempDir() + "/home"})
	writer := grantDir(t, map[string]string{"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", x))})
	later := grantDir(t, map[string]string{
		"read.toml": grant("read_file", fmt.Sprintf("paths = [%q, %q, %q]", x+"/sub/notes", x+"/f.txt", x+"/deep/mid/notes")),
		"sh.toml":   grant("shell", fmt.Sprintf("paths = [%q]", x+"/sub2")),
	})

	// Call 1: the command swaps a last component (sub2), a middle one
	// (sub, deep/mid) and a file (f.txt) for symlinks to outside.
	swap := fmt.Sprintf("mv sub sub.old && ln -s %[1]s sub && mv sub2 sub2.old && ln -s %[1]s sub2 && "+
		"mv deep/mid deep/mid.old && ln -s %[1]s deep/mid && mv f.txt f.old && ln -s %[1]s/secret.txt f.txt && echo swapped", outside)
	if got := content(t, call(t, r, writer, "shell", `{"command":"`+swap+`","cwd":"`+x+`"}`)); got != "swapped\n" {
		t.Fatalf("call 1: %q", got)
	}
	for _, tc := range []struct{ tool, args, path string }{
		{"read_file", `{"path":"` + x + `/sub/notes/a.md"}`, x + "/sub/notes"},
		{"read_file", `{"path":"` + x + `/deep/mid/notes/a.md"}`, x + "/deep/mid/notes"},
		{"read_file", `{"path":"` + x + `/f.txt"}`, x + "/f.txt"},
		{"shell", `{"command":"cat secret.txt notes/a.md","cwd":"` + x + `/sub2"}`, x + "/sub2"},
	} {
		res := call(t, r, later, tc.tool, tc.args)
		msg := failure(t, res)
		if !strings.Contains(msg, "refused to mount "+tc.path+": a component of the path is a symlink") || !strings.HasSuffix(msg, refusedLine) {
			t.Errorf("%s %s: %q", tc.tool, tc.args, msg)
		}
	}
	if leftover := leftovers(t, r); len(leftover) != 0 {
		t.Errorf("leftover containers: %v", leftover)
	}
	if n := heldFds(t, x); n != 0 {
		t.Errorf("%d descriptors left open on the grant", n)
	}
}

// TestMountSwappedBetweenCheckAndCreate: the source is checked and held,
// then (as another call's command could, while this one's container is
// made) its parent is swapped for a symlink to a look-alike outside every
// grant. Podman resolves the path again when the container starts, and
// the measurement in docs/decisions.md shows it cannot be given the held
// descriptor instead; the toolkit finds that the object at the path is not
// the one checked and runs nothing, so the look-alike's content never
// reaches the tool.
func TestMountSwappedBetweenCheckAndCreate(t *testing.T) {
	r := testRuntime(t, nil)
	base := t.TempDir()
	d := filepath.Join(base, "a", "d")
	other := filepath.Join(base, "x", "d")
	for dir, body := range map[string]string{d: "checked\n", other: "OTHER\n"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	grants := grantDir(t, map[string]string{
		"read.toml":  grant("read_file", fmt.Sprintf("paths = [%q]", d)),
		"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", d)),
	})
	swapped := 0
	r.checked = func() {
		swapped++
		if heldFds(t, d) != 1 {
			t.Errorf("the checked source is not held open while the container is made")
		}
		if err := os.Rename(filepath.Join(base, "a"), filepath.Join(base, "a.old")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(base, "x"), filepath.Join(base, "a")); err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		os.Remove(filepath.Join(base, "a"))
		if err := os.Rename(filepath.Join(base, "a.old"), filepath.Join(base, "a")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ tool, args string }{
		{"read_file", `{"path":"` + d + `/f"}`},
		{"shell", `{"command":"cat f","cwd":"` + d + `"}`},
	} {
		res := call(t, r, grants, tc.tool, tc.args)
		restore()
		if strings.Contains(fmt.Sprint(res.Response), "OTHER") {
			t.Fatalf("%s: the look-alike was mounted and read: %#v", tc.tool, res.Response)
		}
		msg := failure(t, res)
		if !strings.Contains(msg, "refused to run: the mount at "+d+" is not what brokerd checked") || !strings.HasSuffix(msg, refusedLine) {
			t.Errorf("%s: %q", tc.tool, msg)
		}
	}
	if swapped != 2 {
		t.Fatalf("the hook ran %d times", swapped)
	}
	// Unswapped, the same calls read the checked folder.
	r.checked = nil
	if got := content(t, call(t, r, grants, "read_file", `{"path":"`+d+`/f"}`)); got != "checked\n" {
		t.Errorf("read_file: %q", got)
	}
	if n := heldFds(t, base); n != 0 {
		t.Errorf("%d descriptors left open after the calls", n)
	}
	if leftover := leftovers(t, r); len(leftover) != 0 {
		t.Errorf("leftover containers: %v", leftover)
	}
}
