package toolkit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// probeContainment adds the probe's lines about what keeps a tool inside
// its container, beyond probe's limits: the CPU quota, the file size
// limit, seccomp, whether namespaces can be made or entered, and the
// scratch tmpfs mounts as mountinfo shows them. brokerd compares them with
// what it asked for (issue 12, items 4 and 6).
func probeContainment(line func(name, value string)) {
	line("cpu", cpuQuota())
	line("fsize", rlimit(unix.RLIMIT_FSIZE))
	line("seccomp", statusField("Seccomp"))
	// Each way a process makes a user namespace: a child cloned into one,
	// a child that unshares into one before it runs anything (a Go
	// process is multithreaded, so only a fresh child can unshare a user
	// namespace), entering one, and clone3, whose flags seccomp cannot
	// see.
	line("userns_clone", startIn(&syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}))
	line("userns_unshare", startIn(&syscall.SysProcAttr{Unshareflags: unix.CLONE_NEWUSER}))
	line("setns", trySetns())
	line("clone3", tryClone3())
	mounts := mountinfo()
	for _, dir := range []string{"/tmp", "/var/tmp", "/run"} {
		v, ok := mounts[dir]
		if !ok {
			v = "none"
		}
		line("mount:"+dir, v)
	}
}

// cpuQuota is the CFS quota and period, "quota/period" in microseconds,
// from cgroup v2's cpu.max or cgroup v1's cpu controller; "max" for none.
func cpuQuota() string {
	if b, err := os.ReadFile("/sys/fs/cgroup/cpu.max"); err == nil {
		q, p, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		return q + "/" + p
	}
	for _, dir := range []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"} {
		q, err1 := os.ReadFile(dir + "/cpu.cfs_quota_us")
		p, err2 := os.ReadFile(dir + "/cpu.cfs_period_us")
		if err1 == nil && err2 == nil {
			quota := strings.TrimSpace(string(q))
			if quota == "-1" {
				quota = "max"
			}
			return quota + "/" + strings.TrimSpace(string(p))
		}
	}
	return "unknown"
}

func statusField(name string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// startIn starts /bin/true with attr: "refused <errno>" when the kernel or
// seccomp would not make the namespace, "allowed" when it ran.
func startIn(attr *syscall.SysProcAttr) string {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = attr
	err := cmd.Run()
	var errno syscall.Errno
	switch {
	case err == nil:
		return "allowed"
	case errors.As(err, &errno):
		return "refused " + unix.ErrnoName(errno)
	default:
		// It started, in the namespace, and then failed.
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "allowed"
		}
		return "unknown " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
}

// trySetns enters this process's own user namespace. Past seccomp the
// kernel refuses that with EINVAL (a process cannot re-enter its own, nor
// a multithreaded one any); seccomp's refusal is EPERM.
func trySetns() string {
	f, err := os.Open("/proc/self/ns/user")
	if err != nil {
		return "unknown " + err.Error()
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWUSER); err != nil {
		return "refused " + errnoName(err)
	}
	return "allowed"
}

// tryClone3 calls clone3 with no arguments: the kernel answers EINVAL, a
// seccomp filter that hides the call ENOSYS. Nothing is cloned either way.
func tryClone3() string {
	_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	if e == 0 {
		return "allowed"
	}
	return "refused " + unix.ErrnoName(e)
}

func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// mountinfo maps each mount point to "fstype mount-options super-options"
// from /proc/self/mountinfo; the last mount on a point wins, as it is the
// one a path resolves to.
func mountinfo() map[string]string {
	m := map[string]string{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if !ok || len(a) < 6 || len(b) < 3 {
			continue
		}
		m[a[4]] = fmt.Sprintf("%s %s %s", b[0], a[5], b[2])
	}
	return m
}
