package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Debian 12 tree .ci/systemd-setup makes (just systemd-setup); the
// variable names another.
const (
	systemdTreeEnv     = "BOXMAKER_TEST_SYSTEMD_TREE"
	defaultSystemdTree = "/var/cache/boxmaker/nspawn/bookworm"
	setupHint          = "run `just systemd-setup` as root (.ci/systemd-setup installs debootstrap and systemd-container and makes the tree)"
)

// systemdTree is the cached tree, or the test fails saying how to make it:
// a missing tree or tool is a failure, never a skip.
func systemdTree(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the booted-systemd test mounts, chroots and boots a container: it must run as root (CI does)")
	}
	for _, tool := range []string{"systemd-nspawn", "nsenter", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v; %s", tool, err, setupHint)
		}
	}
	tree := defaultSystemdTree
	if v := os.Getenv(systemdTreeEnv); v != "" {
		tree = v
	}
	if _, err := os.Stat(filepath.Join(tree, "usr/lib/systemd/systemd")); err != nil {
		t.Fatalf("no bootable Debian tree at %s (%v); %s", tree, err, setupHint)
	}
	// overlayfs options are separated by commas and colons.
	if strings.ContainsAny(tree, ",:") {
		t.Fatalf("%s: a tree path with a comma or colon cannot be an overlay's lower directory", tree)
	}
	return tree
}

// overlay mounts a writable overlay over the cached tree and returns its
// root: the container's /. Nothing is copied (cp -a of the 200 MB tree and
// its removal took about 2 s; the mount takes 10 ms), and the cache is
// never written. Unmounted and removed when the test ends.
func overlay(t *testing.T, tree string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "bxboot")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", tree, filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	if err := syscall.Mount("overlay", root, "overlay", 0, opts); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("mount the overlay over %s: %v", tree, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(root, 0); err != nil {
			t.Errorf("unmount %s: %v", root, err)
			syscall.Unmount(root, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return root
}

// container is a booted systemd-nspawn container.
type container struct {
	t    *testing.T
	root string
	name string
	log  string
	cmd  *exec.Cmd
	// done is closed once nspawn has exited; the goroutine that waits for
	// it is owned by the container and ends with nspawn.
	done chan struct{}
	// leader is the container's systemd, by its host pid; pidNS its pid
	// namespace, to find any process left behind.
	leader int
	pidNS  string
}

// boot starts systemd in root and waits until it is up. --keep-unit and
// --register=no: nspawn then asks nothing of the host's systemd (it is not
// PID 1 on these machines, and without them nspawn fails with "Failed to
// open system bus"); --console=read-only, as there is no terminal;
// --private-network: the container's 127.0.0.1:8080 (the stand-in model)
// is its own, whatever the host listens on, and nothing inside reaches
// the host's network.
// extra are more nspawn options.
func boot(t *testing.T, root string, extra ...string) *container {
	t.Helper()
	c := &container{t: t, root: root, name: fmt.Sprintf("bxboot%d", os.Getpid()), log: filepath.Join(filepath.Dir(root), "console.log"),
		done: make(chan struct{})}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	c.cmd = exec.Command("systemd-nspawn", append([]string{"-D", root, "-b", "--register=no", "--keep-unit", "--console=read-only",
		"--private-network", "--machine=" + c.name}, extra...)...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("systemd-nspawn: %v", err)
	}
	go func() {
		c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(c.stop)
	deadline := time.Now().Add(15 * time.Second)
	for c.leader == 0 {
		if time.Now().After(deadline) || c.exited() {
			t.Fatalf("no systemd under systemd-nspawn (pid %d):\n%s", c.cmd.Process.Pid, c.console())
		}
		c.leader = childNamed(c.cmd.Process.Pid, "systemd")
		time.Sleep(50 * time.Millisecond)
	}
	if c.pidNS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", c.leader)); err != nil {
		t.Fatal(err)
	}
	var state string
	for state != "running" && state != "degraded" {
		if time.Now().After(deadline) || c.exited() {
			t.Fatalf("the container's systemd is %q, not running:\n%s", state, c.console())
		}
		// Before systemd listens, systemctl fails: try again.
		state, _ = c.out("systemctl", "is-system-running")
		time.Sleep(50 * time.Millisecond)
	}
	if state == "degraded" {
		failed, _ := c.out("systemctl", "--failed", "--no-legend")
		t.Logf("the container booted degraded; failed units:\n%s", failed)
	}
	return c
}

// childNamed is the child of pid whose command is name, or 0.
func childNamed(pid int, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if s[open+1:end] == name && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return child
		}
	}
	return 0
}

func (c *container) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// command runs args inside the container (all its namespaces) with a plain
// environment, bounded in time.
func (c *container) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(c.leader), "-a", "--"}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}
	return cmd
}

// out is the command's stdout, trimmed; the error carries its stderr.
func (c *container) out(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := c.command(ctx, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s: did not finish within 30 s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	} else if err != nil {
		err = fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(b)), err
}

// must is out, failing the test on an error.
func (c *container) must(args ...string) string {
	c.t.Helper()
	s, err := c.out(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// combined is stdout and stderr together, and the error.
func (c *container) combined(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := c.command(ctx, args...).CombinedOutput()
	return strings.TrimSpace(string(b)), err
}

// show is a unit's properties by name (systemctl show -p).
func (c *container) show(unit string, props ...string) map[string]string {
	c.t.Helper()
	out := c.must("systemctl", "show", "-p", strings.Join(props, ","), unit)
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// journal is a unit's log, for failure messages.
func (c *container) journal(unit string) string {
	s, _ := c.combined("journalctl", "--no-pager", "-o", "cat", "-u", unit)
	return s
}

func (c *container) console() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// poweroff shuts the container down as the system would and checks that no
// process of it is left. It returns how long the shutdown took.
func (c *container) poweroff() time.Duration {
	c.t.Helper()
	start := time.Now()
	if _, err := c.combined("systemctl", "poweroff"); err != nil && !c.exited() {
		c.t.Errorf("systemctl poweroff: %v", err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("the container did not power off within 30 s:\n%s", c.console())
	}
	took := time.Since(start)
	if left := processesIn(c.pidNS); len(left) > 0 {
		c.t.Errorf("processes of the container left after poweroff: %v", left)
	}
	if err := syscall.Kill(c.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		c.t.Errorf("systemd-nspawn (pid %d) is still there after poweroff: %v", c.cmd.Process.Pid, err)
	}
	return took
}

// stop ends the container whatever state the test left it in: poweroff,
// then SIGKILL to its systemd (which ends every process of its pid
// namespace) and to nspawn.
func (c *container) stop() {
	if !c.exited() && c.leader != 0 {
		c.combined("systemctl", "poweroff")
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
		}
	}
	if !c.exited() {
		if c.leader != 0 {
			syscall.Kill(c.leader, syscall.SIGKILL)
		}
		c.cmd.Process.Kill()
		<-c.done
	}
	// nspawn keeps a directory per machine here; on a /run that is not a
	// tmpfs it refuses to remove it recursively, but it is empty.
	os.Remove(filepath.Join("/run/systemd/nspawn/propagate", c.name))
}

// processesIn lists the host pids of the processes in the pid namespace ns.
func processesIn(ns string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns/pid")); err == nil && l == ns {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readIDs reads the tree's own user or group file: name to id. The container
// shares the host's uids, but its names are its own.
func readIDs(t *testing.T, file string) map[string]uint32 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if id, err := strconv.ParseUint(fields[2], 10, 32); err == nil {
			m[fields[0]] = uint32(id)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}
