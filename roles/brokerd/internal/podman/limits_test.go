package podman

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// shellCall runs command with a shell grant of no paths.
func shellCall(t *testing.T, r *Runtime, command string) (wire.ToolResponse, time.Duration) {
	t.Helper()
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", "")})
	args, err := wire.Marshal(struct {
		Command string `json:"command"`
	}{command})
	if err != nil {
		t.Fatal(err)
	}
	var resp wire.ToolResponse
	d := elapsed(func() { resp = call(t, r, grants, "shell", string(args)).Response })
	return resp, d
}

func noLeftovers(t *testing.T, r *Runtime) {
	t.Helper()
	if ids := leftovers(t, r); len(ids) != 0 {
		t.Errorf("leftover containers: %v", ids)
	}
}

// TestLimitsAreSeenInside: the probe brokerd runs at startup sees the
// configured limits from inside the container (New runs it and would have
// failed; this shows the values).
func TestLimitsAreSeenInside(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.MemoryBytes, c.Pids, c.NoFile = 96<<20, 40, 100 })
	ans, err := r.run(context.Background(), r.containerFor("probe"), probeRequest(), "")
	if err != nil {
		t.Fatal(err)
	}
	seen := parseProbe(ans.Text)
	t.Logf("the probe sees:\n%s", ans.Text)
	for k, want := range map[string]string{"memory": strconv.Itoa(96 << 20), "pids": "40", "nofile": "100/100",
		"uid": "65534", "gid": "65534", "nonewprivs": "1", "capeff": "0000000000000000", "interfaces": "lo", "rootfs": "ro"} {
		if seen[k] != want {
			t.Errorf("%s: %q, want %q", k, seen[k], want)
		}
	}
	noLeftovers(t, r)
}

// TestLimitProblems: each way a probe can fail to see a limit is reported.
func TestLimitProblems(t *testing.T) {
	r := &Runtime{cfg: DefaultConfig()}
	good := map[string]string{"memory": strconv.Itoa(DefaultMemoryBytes), "pids": "64", "nofile": "256/256", "uid": "65534",
		"capeff": "0000000000000000", "nonewprivs": "1", "interfaces": "lo", "rootfs": "ro"}
	if p := r.limitProblems(good); len(p) != 0 {
		t.Fatalf("good: %v", p)
	}
	for k, v := range map[string]string{"memory": "9223372036854771712", "pids": "max", "nofile": "1048576/1048576", "uid": "0",
		"capeff": "00000000a80425fb", "nonewprivs": "0", "interfaces": "lo,eth0", "rootfs": "rw"} {
		bad := map[string]string{}
		for gk, gv := range good {
			bad[gk] = gv
		}
		bad[k] = v
		if p := r.limitProblems(bad); len(p) != 1 || !strings.HasPrefix(p[0], k+" is ") {
			t.Errorf("%s=%s: %v", k, v, p)
		}
	}
}

func TestTimeoutStopsTheContainer(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.TimeoutMS = 1500 })
	resp, d := shellCall(t, r, "sleep 1000")
	f, ok := resp.(wire.FailedResponse)
	if !ok || f.Message != "the tool did not finish within 1.5s and was stopped" {
		t.Fatalf("%#v", resp)
	}
	if d > 5*time.Second {
		t.Errorf("the answer took %s", d)
	}
	noLeftovers(t, r)
}

func TestProcessLimitHolds(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.Pids = 32 })
	// An inner shell starts sleeps until the pids cgroup refuses a fork;
	// the outer one then reads the cgroup's counters with builtins only,
	// since it cannot fork either.
	resp, _ := shellCall(t, r, `sh -c 'for i in $(seq 100); do sleep 30 & done' 2>/dev/null
for d in /sys/fs/cgroup/pids /sys/fs/cgroup; do [ -r $d/pids.current ] && { read cur < $d/pids.current; read max < $d/pids.max; read ev < $d/pids.events; }; done
echo "current=$cur max=$max events=$ev"`)
	got := contentOf(t, resp)
	m := regexp.MustCompile(`current=(\d+) max=32 events=max (\d+)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("%q", got)
	}
	if cur, _ := strconv.Atoi(m[1]); cur > 32 || cur < 16 {
		t.Errorf("%d tasks with pids = 32: %q", cur, got)
	}
	if refused, _ := strconv.Atoi(m[2]); refused == 0 {
		t.Errorf("no fork was refused: %q", got)
	}
	t.Logf("%s", got)
	// A real fork bomb: the call ends (result or failure) within its time,
	// and nothing is left behind.
	resp, d := shellCall(t, r, "b() { b | b & }; b; sleep 2; echo survived")
	t.Logf("fork bomb: %#v after %s", resp, d)
	noLeftovers(t, r)
}

func TestMemoryLimitHolds(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.MemoryBytes = 64 << 20 })
	// tail -n 1 keeps a line without a newline in memory: 200 MiB of it
	// cannot fit in 64.
	resp, _ := shellCall(t, r, "head -c 200m /dev/zero | tail -n 1 | wc -c")
	// The kernel's OOM killer picks its victim: when it is tail, the shell
	// reports it; when it is the tool's own process, the whole call fails
	// as killed. Both stop the hog; anything else does not.
	if f, ok := resp.(wire.FailedResponse); ok {
		if !strings.HasPrefix(f.Message, "the tool was killed (exit status 137)") {
			t.Fatalf("the memory hog failed otherwise: %#v", f)
		}
		t.Logf("killed whole: %q", f.Message)
		noLeftovers(t, r)
		return
	}
	got := contentOf(t, resp)
	if !strings.Contains(got, "[exit status") && !strings.Contains(got, "Killed") && !strings.Contains(got, "killed") {
		t.Fatalf("the memory hog was not stopped: %q", got)
	}
	if strings.HasPrefix(got, "209715200\n") {
		t.Fatalf("the memory hog finished: %q", got)
	}
	t.Logf("%q", got)
	noLeftovers(t, r)
}

func TestOutputIsCapped(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.OutputBytes = 1000 })
	resp, _ := shellCall(t, r, "yes | head -c 100000")
	res, ok := resp.(wire.ResultResponse)
	if !ok || len(res.Content) != 1000 || !res.Truncated {
		t.Fatalf("%d bytes, %#v", len(fmt.Sprint(resp)), ok)
	}
	noLeftovers(t, r)
}

func contentOf(t *testing.T, resp wire.ToolResponse) string {
	t.Helper()
	res, ok := resp.(wire.ResultResponse)
	if !ok {
		t.Fatalf("not a result: %#v", resp)
	}
	return res.Content
}
