package podman

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"boxmaker/wire"
)

// TestUserNamespacesRefused is issue 12's item 4 attack, end to end: a
// shell command runs busybox's "unshare -r" to get a full capability set
// in a new user namespace. Under Podman's default profile (the control,
// and what brokerd used before) it works on these kernels; under
// brokerd's profile it is refused, and seccomp is on.
func TestUserNamespacesRefused(t *testing.T) {
	const attack = `busybox unshare -r sh -c 'id -u; grep CapEff /proc/self/status' 2>&1; echo "rc=$?"
busybox unshare -U -m -n true 2>&1; echo "rc2=$?"
grep Seccomp: /proc/self/status`
	r := testRuntime(t, nil)
	got := contentOf(t, first(shellCall(t, r, attack)))
	t.Logf("brokerd's profile:\n%s", got)
	if !regexp.MustCompile(`(?m)^rc=[1-9]`).MatchString(got) || !regexp.MustCompile(`(?m)^rc2=[1-9]`).MatchString(got) ||
		!strings.Contains(got, "Operation not permitted") || strings.Contains(got, "0000003fffffffff") || strings.Contains(got, "CapEff:\t000001ff") {
		t.Errorf("a user namespace was made:\n%s", got)
	}
	if !regexp.MustCompile(`(?m)^Seccomp:\s+2$`).MatchString(got) {
		t.Errorf("no seccomp filter:\n%s", got)
	}
	// The control: the same command under the default profile (no
	// profile path) gets its namespace, so the refusal above is the
	// profile's doing and the attack is real here.
	def := &Runtime{cfg: r.cfg, log: r.log, scope: r.scope}
	got = contentOf(t, first(shellCall(t, def, attack)))
	def.Close()
	t.Logf("Podman's default profile:\n%s", got)
	if !regexp.MustCompile(`(?m)^0\nCapEff:\s+[0-9a-f]*[1-9a-f][0-9a-f]*\nrc=0$`).MatchString(got) {
		t.Errorf("the control did not get a user namespace; the test shows nothing:\n%s", got)
	}
	noLeftovers(t, r)
}

// TestProbeRefusesNamespaces: brokerd does not start when its probe
// container can make a user namespace (here: the default profile).
func TestProbeRefusesNamespaces(t *testing.T) {
	r := testRuntime(t, nil)
	def := &Runtime{cfg: r.cfg, log: r.log, scope: r.scope}
	err := def.CheckLimits(context.Background())
	def.Close()
	if !errors.Is(err, ErrNamespaces) || !strings.Contains(err.Error(), "userns_unshare is \"allowed\"") ||
		!strings.HasSuffix(err.Error(), "see docs/runbook.md#tool-namespaces-allowed") {
		t.Fatalf("%v", err)
	}
	t.Log(err)
	noLeftovers(t, r)
}

func first(resp wire.ToolResponse, _ any) wire.ToolResponse { return resp }

// goodProbe is what the probe sees under the default configuration.
func goodProbe() map[string]string {
	return map[string]string{"cpu": "100000/100000", "fsize": "67108864/67108864", "seccomp": "2",
		"userns_clone": "refused EPERM", "userns_unshare": "refused EPERM", "setns": "refused EPERM", "clone3": "refused ENOSYS",
		"mount:/tmp":     "tmpfs rw,nosuid,nodev,relatime rw,size=65536k",
		"mount:/var/tmp": "tmpfs rw,nosuid,nodev,relatime rw,size=65536k",
		"mount:/run":     "tmpfs rw,nosuid,nodev,relatime rw,size=1024k,mode=755"}
}

// TestContainProblems: each way the probe can see a containment setting
// missing is reported, namespaces apart from the other limits.
func TestContainProblems(t *testing.T) {
	r := &Runtime{cfg: DefaultConfig()}
	if p := append(nsProblems(goodProbe()), r.containProblems(goodProbe())...); len(p) != 0 {
		t.Fatalf("good: %v", p)
	}
	ns := map[string]string{"seccomp": "0", "userns_clone": "allowed", "userns_unshare": "allowed", "setns": "refused EINVAL",
		"clone3": "refused EINVAL"}
	other := map[string]string{"cpu": "max/100000", "fsize": "18446744073709551615/18446744073709551615",
		"mount:/tmp": "none", "mount:/var/tmp": "tmpfs rw,nodev rw,size=65536k", "mount:/run": "tmpfs rw,nosuid,nodev rw,size=2048k"}
	for k, v := range ns {
		bad := maps.Clone(goodProbe())
		bad[k] = v
		if p := nsProblems(bad); len(p) != 1 || !strings.HasPrefix(p[0], k+" is ") {
			t.Errorf("%s=%s: %v", k, v, p)
		}
	}
	// A child that failed after the clone (no /bin/true) is no proof the
	// namespace was refused.
	for _, k := range []string{"userns_clone", "userns_unshare"} {
		bad := maps.Clone(goodProbe())
		bad[k] = "refused ENOENT"
		if p := nsProblems(bad); len(p) != 1 {
			t.Errorf("%s=refused ENOENT: %v", k, p)
		}
	}
	for k, v := range other {
		bad := maps.Clone(goodProbe())
		bad[k] = v
		if p := r.containProblems(bad); len(p) != 1 || !strings.HasPrefix(p[0], k+" is ") {
			t.Errorf("%s=%s: %v", k, v, p)
		}
	}
}

// TestCPUQuotaHolds: two busy loops in a container with a fifth of a CPU
// are throttled, and use at most about that, as the container's own
// cgroup counts it.
func TestCPUQuotaHolds(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.CPUMillicores = 200 })
	got := contentOf(t, first(shellCall(t, r, `c=/sys/fs/cgroup/cpu d=/sys/fs/cgroup/cpuacct
read u0 < $d/cpuacct.usage
sh -c 'while :; do :; done' & a=$!
sh -c 'while :; do :; done' & b=$!
sleep 2
kill $a $b
read u1 < $d/cpuacct.usage
echo "used=$((u1-u0))"
grep nr_throttled $c/cpu.stat`)))
	t.Logf("%s", got)
	m := regexp.MustCompile(`used=(\d+)\nnr_throttled (\d+)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("%q", got)
	}
	used, _ := strconv.ParseInt(m[1], 10, 64)
	throttled, _ := strconv.Atoi(m[2])
	// 2 s at 0.2 CPU is 0.4 s of CPU time; allow for the reads and kill.
	if used > 600_000_000 || throttled == 0 {
		t.Errorf("used %d ns of CPU in 2 s with a 0.2 CPU quota, throttled %d times", used, throttled)
	}
	noLeftovers(t, r)
}

// TestScratchTmpfs: /tmp, /var/tmp and /run are tmpfs mounts, sized,
// nosuid and nodev, as mountinfo shows them from inside; the tool can
// write to /tmp and /var/tmp, and no more than their size.
func TestScratchTmpfs(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.TmpfsBytes = 2 << 20 })
	got := contentOf(t, first(shellCall(t, r, `grep -E ' /(tmp|var/tmp|run) ' /proc/self/mountinfo
head -c 3m /dev/zero 2>/dev/null >/tmp/x; echo "tmp rc=$? $(wc -c < /tmp/x)"
echo hi > /var/tmp/y && echo "var/tmp ok"`)))
	t.Logf("%s", got)
	for _, dir := range []string{"/tmp", "/var/tmp", "/run"} {
		re := regexp.MustCompile(`(?m)^\S+ \S+ \S+ / ` + regexp.QuoteMeta(dir) + ` \S*nosuid,nodev\S* .*- tmpfs \S+ \S*size=(\d+)k`)
		m := re.FindStringSubmatch(got)
		if m == nil {
			t.Errorf("%s is not a nosuid, nodev, sized tmpfs", dir)
			continue
		}
		if k, _ := strconv.Atoi(m[1]); (dir == "/run" && k != 1024) || (dir != "/run" && k != 2048) {
			t.Errorf("%s: size %dk", dir, k)
		}
	}
	if !strings.Contains(got, "tmp rc=1 2097152") || !strings.Contains(got, "var/tmp ok") {
		t.Errorf("writes to the tmpfs:\n%s", got)
	}
	noLeftovers(t, r)
}

// TestFileSizeLimit: no file in a writable grant grows past file_bytes.
func TestFileSizeLimit(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.FileBytes = 1 << 20 })
	dir := hostDir(t, true, nil)
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", dir))})
	args, _ := wire.Marshal(struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
	}{`head -c 3m /dev/zero > big; echo "rc=$?"; wc -c < big`, dir})
	got := content(t, call(t, r, grants, "shell", string(args)))
	t.Logf("%s", got)
	if !regexp.MustCompile(`(?m)^rc=[1-9]\d*\n1048576\n`).MatchString(got) {
		t.Errorf("the file grew past 1 MiB or the write did not fail:\n%s", got)
	}
	noLeftovers(t, r)
}
