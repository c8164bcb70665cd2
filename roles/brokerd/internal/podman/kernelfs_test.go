package podman

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"boxmaker/roles/brokerd/internal/runner"
)

// TestKernelFilesystemsRefused (issue 29): a grant on a kernel filesystem
// is refused before any container is made, whatever path reaches it. A
// shell grant on /proc is a bind of the host's procfs, which runc accepts
// over the container's own /proc: the tool then sees every host process,
// and through /proc/<pid>/root, /proc/<pid>/cwd and /proc/<pid>/fd/N the
// files of any process its user may trace (another call's container runs
// as the same user). /sys, cgroup, devpts and mqueue are the kernel's own
// state, never the owner's files. The filesystem is told by fstatfs of the
// descriptor brokerd holds, so a path that does not look like /proc (a
// bind mount of it elsewhere) is refused the same.
func TestKernelFilesystemsRefused(t *testing.T) {
	r := offlineRuntime(t)
	pid := fmt.Sprint(os.Getpid())
	shell := func(path string) string {
		return refusal(t, r, "shell", path, `{"command":"true","cwd":"`+path+`"}`)
	}
	cases := []string{"/proc", "/proc/" + pid, "/proc/" + pid + "/fd", "/proc/" + pid + "/task", "/proc/sys", "/sys", "/sys/kernel"}
	for _, p := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/dev/pts", "/dev/mqueue"} {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			cases = append(cases, p)
		}
	}
	// procfs reached at a path outside /proc.
	alias := t.TempDir() + "/p"
	if err := os.Mkdir(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mountBind(t, "/proc", alias); err == nil {
		cases = append(cases, alias, alias+"/"+pid)
	}
	for _, p := range cases {
		if got := shell(p); !strings.Contains(got, "it is on a kernel filesystem (") {
			t.Errorf("shell on %s: %q, want a refusal naming the kernel filesystem", p, got)
		}
	}
	for _, p := range []string{"/proc/" + pid + "/status", "/proc/self/status", "/sys/kernel/hostname"} {
		if got := refusal(t, r, "read_file", p, `{"path":"`+p+`"}`); got == "" {
			t.Errorf("read_file of %s was not refused", p)
		}
	}
	// Beside them, an ordinary folder is mounted.
	if got := shell(t.TempDir()); got != "" {
		t.Errorf("an ordinary folder: %q", got)
	}
}

// mountBind bind-mounts src on dst until the test ends.
func mountBind(t *testing.T, src, dst string) error {
	t.Helper()
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		t.Logf("bind mount %s on %s: %v", src, dst, err)
		return err
	}
	t.Cleanup(func() { syscall.Unmount(dst, syscall.MNT_DETACH) })
	return nil
}

// TestPathShapesRefused (issue 29): openSource, whatever policy let
// through, refuses each shape of path that could reach something other
// than what the grant names: "..", ".", "//", a trailing slash, a
// relative path, /proc/self/fd/N and /proc/<pid>/fd/N of a descriptor
// brokerd holds (magic links to wherever it points), /proc/<pid>/root and
// cwd, a symlink loop and a symlink to "/".
func TestPathShapesRefused(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(base+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(base + "/d")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	fd, pid := fmt.Sprint(held.Fd()), fmt.Sprint(os.Getpid())
	for _, l := range [][2]string{{base + "/loop2", base + "/loop1"}, {base + "/loop1", base + "/loop2"}, {"/", base + "/root"}} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path string
		dir  bool
		want string
	}{
		{base + "/d/..", true, "has a .. component"},
		{base + "/d/.", true, "has a . component"},
		{base + "//d", true, "has an empty component"},
		{base + "/d/", true, "has an empty component"},
		{"d", true, "is not absolute"},
		{"/proc/self/fd/" + fd, true, "is a symlink"},
		{"/proc/thread-self/fd/" + fd, true, "is a symlink"},
		{"/proc/" + pid + "/fd/" + fd, true, "is a symlink"},
		{"/proc/" + pid + "/root", true, "is a symlink"},
		{"/proc/" + pid + "/cwd", true, "is a symlink"},
		{"/proc/" + pid + "/root" + base + "/d", true, "is a symlink"},
		{"/proc/" + pid + "/fd", true, "kernel filesystem (proc)"},
		{"/proc/" + pid + "/fdinfo/" + fd, false, "kernel filesystem (proc)"},
		{base + "/loop1", true, "is a symlink"},
		{base + "/loop1/x", true, "is a symlink"},
		{base + "/root" + base + "/d", true, "is a symlink"},
	} {
		src, err := openSource(runner.Mount{Path: tc.path}, tc.dir)
		if err == nil {
			src.file.Close()
			t.Errorf("%s: opened", tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), refusedLine) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}
