package podman

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/roles/brokerd/internal/runner"
)

// offlineRuntime is a Runtime whose Podman service does not exist: a call
// that passes the mount checks fails with "not reachable", so a refusal
// that names the mount shows the check ran before any container was asked
// for.
func offlineRuntime(t testing.TB) *Runtime {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Socket = "unix://" + filepath.Join(t.TempDir(), "no-podman.sock")
	return &Runtime{cfg: cfg, log: testLog{t}, scope: testScope}
}

const refusedLine = "see docs/runbook.md#mount-source-refused"

// refusal runs tool(args) under one grant of tool on path and returns the
// failure's message; a call that reached the (absent) service returns "".
func refusal(t *testing.T, r *Runtime, tool, path, args string) string {
	t.Helper()
	grants := grantDir(t, map[string]string{"g.toml": grant(tool, fmt.Sprintf("paths = [%q]", path))})
	msg := failure(t, call(t, r, grants, tool, args))
	if strings.Contains(msg, "is not reachable") {
		return ""
	}
	if !strings.HasPrefix(msg, "podman: refused to mount "+path+": ") || !strings.HasSuffix(msg, refusedLine) {
		t.Errorf("%s on %s: the refusal %q does not name the path and the runbook entry", tool, path, msg)
	}
	return msg
}

// TestMountSourceRefusedBeforeCreate: a grant path with a symlink in any
// component, one that does not exist, or one of the wrong kind for the
// tool is refused, naming the path and the runbook entry, before Podman is
// asked for anything.
func TestMountSourceRefusedBeforeCreate(t *testing.T) {
	r := offlineRuntime(t)
	base := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := func(rel string) string {
		p := filepath.Join(base, rel)
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, rel string) string {
		p := filepath.Join(base, rel)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	real := mk("real/notes")
	file("real/notes/a.md")
	file("real/f.txt")
	mk("dirfile.md")
	link(filepath.Join(base, "real"), "mid")
	link(real, "last")
	link(filepath.Join(base, "real", "f.txt"), "flink.txt")
	if err := os.Link(filepath.Join(base, "real", "f.txt"), filepath.Join(base, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	// A symlink as the path's first component, in the root directory.
	first := fmt.Sprintf("/bxlink-%d", os.Getpid())
	if err := os.Symlink(base, first); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(first) })

	for _, tc := range []struct {
		name, tool, path, args, want string
	}{
		{"ok", "read_file", real, `{"path":"` + real + `/a.md"}`, ""},
		{"first component", "read_file", first + "/real/notes", `{"path":"` + first + `/real/notes/a.md"}`, "is a symlink"},
		{"middle component", "read_file", base + "/mid/notes", `{"path":"` + base + `/mid/notes/a.md"}`, "is a symlink"},
		{"last component", "shell", base + "/last", `{"command":"cat a.md","cwd":"` + base + `/last"}`, "is a symlink"},
		{"file symlink", "read_file", base + "/flink.txt", `{"path":"` + base + `/flink.txt"}`, "is a symlink"},
		{"write under a symlink", "write_file", base + "/last", `{"path":"` + base + `/last/b.md","content":"x"}`, "is a symlink"},
		{"missing", "shell", base + "/nothing", `{"command":"true","cwd":"` + base + `/nothing"}`, "it does not exist"},
		{"missing file", "read_file", base + "/real/none.md", `{"path":"` + base + `/real/none.md"}`, "it does not exist"},
		{"below a file", "read_file", base + "/real/f.txt/x", `{"path":"` + base + `/real/f.txt/x"}`, "is not a directory"},
		{"shell on a file", "shell", base + "/real/f.txt", `{"command":"true","cwd":"` + base + `/real/f.txt"}`, "it is not a directory"},
		{"write_file in a file", "write_file", base + "/real/f.txt", `{"path":"` + base + `/real/f.txt/b","content":"x"}`, "it is not a directory"},
		{"read_file of a directory", "read_file", base + "/dirfile.md", `{"path":"` + base + `/dirfile.md"}`, "it is not a regular file"},
		{"hard link", "read_file", base + "/hard.txt", `{"path":"` + base + `/hard.txt"}`, "hard links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refusal(t, r, tc.tool, tc.path, tc.args)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want a refusal saying %q", got, tc.want)
			}
		})
	}
}

// TestOpenSourceRefusesDotDot: policy refuses ".." in grant paths and
// arguments, so none reaches the runtime; openSource refuses it all the
// same rather than resolve it.
func TestOpenSourceRefusesDotDot(t *testing.T) {
	base := t.TempDir()
	for _, p := range []string{base + "/../" + filepath.Base(base), base + "/.", base + "//x", "relative"} {
		if _, err := openSource(runner.Mount{Path: p}, true); err == nil || !strings.Contains(err.Error(), refusedLine) {
			t.Errorf("%q: %v", p, err)
		}
	}
}

// TestProtectedPaths: a mount that is, contains or lies inside a protected
// path is refused, by object: through a bind mount of it elsewhere, through
// a symlink in the configured path, and for a protected path not made yet.
func TestProtectedPaths(t *testing.T) {
	r := offlineRuntime(t)
	base := t.TempDir()
	for _, d := range []string{"home/audit", "home/sub", "other", "alias", "outer/in"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(base, "other", "brokerd.toml")
	if err := os.WriteFile(conf, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	// The same folder at a second path, as a bind mount: the string
	// compare of paths cannot see it.
	alias := filepath.Join(base, "alias")
	if err := syscall.Mount(home, alias, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount (the tests run as root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(alias, syscall.MNT_DETACH) })
	if err := os.Symlink(home, filepath.Join(base, "homelink")); err != nil {
		t.Fatal(err)
	}

	shell := func(path string) string {
		return refusal(t, r, "shell", path, `{"command":"true","cwd":"`+path+`"}`)
	}
	r.Protect([]string{filepath.Join(base, "homelink"), conf, filepath.Join(base, "outer", "in", "notyet")})
	for _, tc := range []struct{ path, want string }{
		{home, "it is " + base + "/homelink"},
		{home + "/sub", "it lies inside " + base + "/homelink"},
		{base, "it contains " + base + "/homelink"},
		{alias, "it is " + base + "/homelink"},
		{alias + "/audit", "it lies inside " + base + "/homelink"},
		{base + "/other", "it contains " + conf},
		{base + "/outer", "it contains " + base + "/outer/in/notyet"},
		{base + "/outer/in", "it contains " + base + "/outer/in/notyet"},
	} {
		if got := shell(tc.path); !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := refusal(t, r, "read_file", conf, `{"path":"`+conf+`"}`); !strings.Contains(got, "it is "+conf) {
		t.Errorf("the config file itself: %q", got)
	}
	if got := shell(base + "/home/sub"); got == "" {
		t.Error("a folder inside a protected one was mounted")
	}
	// A bind mount of a folder inside a protected one: walking up from it
	// stops at the mount's root, so only its path inside the filesystem
	// shows that it lies inside; and the other way round.
	sub := filepath.Join(base, "subalias")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(home+"/audit", sub, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	r.Protect([]string{home})
	if got := shell(sub); !strings.Contains(got, "it lies inside "+home) {
		t.Errorf("a bind mount of a protected folder's part: %q", got)
	}
	r.Protect([]string{sub + "/state"})
	if got := shell(home); !strings.Contains(got, "it contains "+sub+"/state") {
		t.Errorf("a protected path reached through a bind mount: %q", got)
	}
	// Beside the protected paths, nothing is refused.
	r.Protect([]string{home})
	if got := shell(base + "/other"); got != "" {
		t.Errorf("an unrelated folder: %q", got)
	}
	// A protected path brokerd cannot see refuses every mount.
	r.Protect([]string{filepath.Join(base, "other", "brokerd.toml", "x")})
	if got := shell(base + "/outer"); !strings.Contains(got, "cannot see one of its own protected paths") {
		t.Errorf("an unreadable protected path: %q", got)
	}
}

// heldFds counts this process's descriptors open on path or below it.
func heldFds(t testing.TB, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && (target == path || strings.HasPrefix(target, path+"/")) {
			n++
		}
	}
	return n
}

// TestSourcesHeldThenClosed: the checked sources are held open from the
// check until the call is over, and none is left open after it, whether
// the call ran, was refused or failed.
func TestSourcesHeldThenClosed(t *testing.T) {
	r := offlineRuntime(t)
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	held := -1
	r.checked = func() { held = heldFds(t, base) }
	grants := grantDir(t, map[string]string{"g.toml": grant("shell", fmt.Sprintf("paths = [%q, %q]", dirs[0], dirs[1]))})
	for range 3 {
		failure(t, call(t, r, grants, "shell", `{"command":"true","cwd":"`+dirs[0]+`"}`))
		if held != 2 {
			t.Errorf("%d descriptors held during the call, want 2", held)
		}
		if n := heldFds(t, base); n != 0 {
			t.Fatalf("%d descriptors left open after the call", n)
		}
	}
	// Refused halfway: the first source was opened, the second is missing.
	os.Remove(dirs[1])
	if got := failure(t, call(t, r, grants, "shell", `{"command":"true","cwd":"`+dirs[0]+`"}`)); !strings.Contains(got, "does not exist") {
		t.Errorf("%q", got)
	}
	if n := heldFds(t, base); n != 0 {
		t.Fatalf("%d descriptors left open after a refusal", n)
	}
}
