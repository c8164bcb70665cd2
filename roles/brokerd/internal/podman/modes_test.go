package podman

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/roles/brokerd/internal/podman/podmantest"
)

// The two ways issue 13 weighed to keep a tool container off every uid of
// boxmaker's, and today's, measured side by side on this machine
// (docs/decisions.md, "Where tool containers run").

// toolMode is one way of running tool containers, with a runtime on it.
type toolMode struct {
	name string
	r    *Runtime
	// sub is the first host uid of the range the container's ids map to
	// (-1: none, the service's own ids).
	sub int
}

// toolModes starts the rootful service with a user namespace per
// container and the rootless one under a tools user, beside the shared
// rootful service, and a runtime on each that accepts every limit (so
// that it starts whatever this kernel enforces; TestToolModes says which).
func toolModes(tb testing.TB) []toolMode {
	tb.Helper()
	needRoot(tb)
	prefix := testPrefix("m")
	edit := func(c *Config) {
		c.AcceptUnenforced = slices.Clone(AcceptableLimits)
	}
	modes := []toolMode{{"rootful", testRuntime(tb, edit), -1}}

	// Rootful, userns=auto: Podman takes each container's ids from the
	// subordinate range of root-auto-userns-user (by default "containers").
	auto := podmantest.AddUser(tb, prefix+"auto", true)
	dir, err := os.MkdirTemp("", "bxauto-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	svc := podmantest.StartServiceAs(tb, nil, filepath.Join(dir, "podman.sock"), 0, auto.Name)
	modes = append(modes, toolMode{"rootful-userns-auto", modeRuntime(tb, svc.Socket, testProfile(tb), func(c *Config) {
		edit(c)
		c.UserNS = "auto"
	}), podmantest.SubIDStart(tb, auto.Name)})

	// Rootless, as the tools user; the profile in the shared directory.
	h := newToolsHost(tb, prefix)
	profile, err := writeSeccompProfile(h.shared)
	if err != nil {
		tb.Fatal(err)
	}
	modes = append(modes, toolMode{"rootless", modeRuntime(tb, h.svc.Socket, profile, edit), podmantest.SubIDStart(tb, h.tools.Name)})
	return modes
}

func modeRuntime(tb testing.TB, socket, profile string, edit func(*Config)) *Runtime {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.Socket, cfg.Image, cfg.TimeoutMS = socket, podmantest.Image(tb, socket), 20_000
	edit(&cfg)
	r, err := newRuntime(context.Background(), cfg, testLog{tb}, testScope, profile, "")
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// unenforced runs the probe on r and says which limits it does not see
// enforced.
func unenforced(tb testing.TB, r *Runtime) []string {
	tb.Helper()
	ans, err := r.run(context.Background(), r.containerFor("probe"), probeRequest(), "")
	if err != nil || ans.Status != "result" {
		tb.Fatalf("probe: %v %+v", err, ans)
	}
	seen := parseProbe(ans.Text)
	var out []string
	for _, p := range append(r.limitProblems(seen), r.containProblems(seen)...) {
		if what, _, _ := strings.Cut(p, " "); slices.Contains(AcceptableLimits, what) {
			out = append(out, what)
		} else {
			tb.Errorf("%s: %s", r.cfg.Socket, p)
		}
	}
	return out
}

// cgroupV1 says whether this host's cgroups are v1 (or hybrid).
func cgroupV1(tb testing.TB) bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		tb.Fatal(err)
	}
	return st.Type != unix.CGROUP2_SUPER_MAGIC
}

// TestToolModes: which limits each way enforces here, and the host uid a
// tool runs as. Rootful, with or without its own user namespace, holds
// every limit; rootless on cgroup v1 holds the rlimits (nofile, fsize)
// only, so brokerd refuses it unless brokerd.toml accepts the rest. The
// uid: 65534 on the host for today's rootful service (the host's nobody),
// and a subordinate uid, 65534 above its range's start, for the other two.
func TestToolModes(t *testing.T) {
	v1 := cgroupV1(t)
	for _, m := range toolModes(t) {
		got := unenforced(t, m.r)
		done := make(chan int, 1)
		go func() { done <- toolHostUID(m.r, 8*time.Second) }()
		resp, _ := shellCall(t, m.r, "sleep 2; id -u")
		uid := <-done
		t.Logf("%s: unenforced %v, the tool's host uid %d, %q", m.name, got, uid, contentOf(t, resp))
		want := []string(nil)
		if m.name == "rootless" && v1 {
			want = []string{"memory", "pids", "cpu"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: unenforced %v, want %v", m.name, got, want)
		}
		wantUID := 65534
		if m.sub >= 0 {
			wantUID = m.sub + 65534
			if m.name == "rootless" {
				wantUID-- // uid 0 inside is the tools user itself, 1 the range's start
			}
		}
		if uid != wantUID {
			t.Errorf("%s: the tool ran as host uid %d, want %d", m.name, uid, wantUID)
		}
		if len(got) > 0 {
			// Without accept_unenforced, the same probe refuses to start.
			r := &Runtime{cfg: m.r.cfg, log: testLog{t}}
			r.cfg.AcceptUnenforced = nil
			ans, _ := m.r.run(context.Background(), m.r.containerFor("probe"), probeRequest(), "")
			if err := r.judge(parseProbe(ans.Text)); err == nil || !strings.Contains(err.Error(), got[0]+" is ") {
				t.Errorf("%s without accept_unenforced: %v, want a refusal naming %s", m.name, err, got[0])
			}
		}
		noLeftovers(t, m.r)
	}
}

// BenchmarkToolModes times a trivial shell call (create, attach, start,
// answer, remove) in each mode, alternating, and reports each one's p50
// and p95 and its ratio to today's rootful service. Run it as root:
//
//	go test -run '^$' -bench ToolModes ./roles/brokerd/internal/podman
func BenchmarkToolModes(b *testing.B) {
	modes := toolModes(b)
	grants := grantDir(b, map[string]string{"shell.toml": grant("shell", "")})
	times := make([][]time.Duration, len(modes))
	for range benchRuns {
		for i, m := range modes {
			start := time.Now()
			if got := content(b, call(b, m.r, grants, "shell", `{"command":"true"}`)); got != "(no output)" {
				b.Fatalf("%s: %q", m.name, got)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	p := func(ds []time.Duration, q float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	for i, m := range modes {
		b.ReportMetric(p(times[i], 0.5), m.name+"-p50-ms")
		b.ReportMetric(p(times[i], 0.95), m.name+"-p95-ms")
		if i > 0 {
			b.ReportMetric(p(times[i], 0.5)/p(times[0], 0.5), m.name+"/rootful-p50")
		}
	}
	b.ReportMetric(0, "ns/op")
}
