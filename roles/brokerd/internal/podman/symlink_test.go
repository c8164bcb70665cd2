package podman

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
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

// TestSwapRaceWithConcurrentCall: one call's command swaps a folder back
// and forth between the real one and a symlink to outside, as fast as it
// can, while calls under a grant below it run. Each of those either reads
// the real folder or is refused (by brokerd's check, or by the toolkit's
// when the swap fell between check and mount); none ever reads outside.
func TestSwapRaceWithConcurrentCall(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.TimeoutMS = 20_000 })
	outside := outsideDir(t)
	x := hostDir(t, true, nil)
	if err := os.MkdirAll(filepath.Join(x, "sub", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(x, "sub", "notes", "a.md"), []byte("real\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chownTree(t, x)
	writer := grantDir(t, map[string]string{"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", x))})
	reader := grantDir(t, map[string]string{"read.toml": grant("read_file", fmt.Sprintf("paths = [%q]", x+"/sub/notes"))})

	loop := fmt.Sprintf("while [ ! -e stop ]; do mv sub real && ln -s %s sub && sleep 0.05; rm sub && mv real sub && sleep 0.05; done; echo stopped", outside)
	done := make(chan runner.Result, 1)
	go func() { done <- callNoFatal(r, writer, "shell", `{"command":"`+loop+`","cwd":"`+x+`"}`) }()
	defer func() {
		os.WriteFile(filepath.Join(x, "stop"), nil, 0o644)
		res := <-done
		if got, ok := res.Response.(wire.ResultResponse); !ok || got.Content != "stopped\n" {
			t.Errorf("the swapping call: %#v", res.Response)
		}
	}()
	counts := map[string]int{}
	for range 16 {
		// Out of step with the swapping loop's period.
		time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
		res := call(t, r, reader, "read_file", `{"path":"`+x+`/sub/notes/a.md"}`)
		switch resp := res.Response.(type) {
		case wire.ResultResponse:
			if resp.Content != "real\n" {
				t.Fatalf("read outside the grant: %q", resp.Content)
			}
			counts["read the real folder"]++
		case wire.FailedResponse:
			switch {
			case strings.Contains(resp.Message, "SECRET"):
				t.Fatalf("read outside the grant: %q", resp.Message)
			case strings.HasPrefix(resp.Message, "podman: refused to mount"):
				counts["refused by brokerd"]++
			case strings.HasPrefix(resp.Message, "toolkit: refused to run"):
				counts["refused by the toolkit"]++
			default:
				counts["failed otherwise"]++ // the file missing mid-swap, say
			}
		}
	}
	t.Logf("outcomes: %v", counts)
}

// callNoFatal is call for a goroutine other than the test's.
func callNoFatal(rt runner.Runtime, grants, tool, args string) runner.Result {
	sid, _ := wire.NewSessionID("s-2")
	d := policy.Decide(grants, wire.ToolRequest{Session: sid, Call: 1, Tool: tool, Arguments: args},
		policy.State{Taint: wire.Private}, wire.Now())
	res, err := runner.Run(context.Background(), d, rt)
	if err != nil {
		return runner.Result{Response: wire.FailedResponse{Message: err.Error()}}
	}
	return res
}

// TestBindIsNotRecursive: a granted folder comes without what is mounted
// below it on the host ("bind", not "rbind").
func TestBindIsNotRecursive(t *testing.T) {
	r := testRuntime(t, nil)
	x := hostDir(t, false, nil)
	sub := filepath.Join(x, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=64k,mode=0755"); err != nil {
		t.Fatalf("tmpfs (the tests run as root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(sub, "below.txt"), []byte("mounted below\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", x))})
	if got := content(t, call(t, r, grants, "shell", `{"command":"ls -A sub; echo end","cwd":"`+x+`"}`)); got != "end\n" {
		t.Errorf("the container sees what is mounted below the grant: %q", got)
	}
}
