package podman

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/podman/podmantest"
)

// BenchmarkReadFile is an allowed read_file of a small file, decided by
// policy and run by this runtime, against "podman run --rm" of the same
// image, mount and limits, printing the file with busybox cat; the two
// alternate, so drift on a shared machine hits both. It reports each
// one's p50 and p95 over benchRuns runs and their ratios (the target is
// at most 1). Run it as
//
//	just bench, or go test -run '^$' -bench ReadFile ./roles/brokerd/internal/podman
//
// Each run's time ends once nothing of the call runs: when its toolkit
// is seen to exit (exit.go; the removal follows the call) or, on every
// other path, when its container is removed.
func BenchmarkReadFile(b *testing.B) {
	r := testRuntime(b, nil)
	dir := hostDir(b, false, map[string]string{"a.md": "hello\n"})
	grants := grantDir(b, map[string]string{"read.toml": grant("read_file", "paths = [\""+dir+"\"]")})
	args := `{"path":"` + dir + `/a.md"}`
	cfg := r.cfg
	cli := append(podmantest.CLI(b), "run", "--rm", "--network=none", "--read-only", "--cap-drop=all",
		"--security-opt=no-new-privileges", "--user", cfg.User, "--log-driver=none",
		fmt.Sprintf("--ulimit=nofile=%d:%d", cfg.NoFile, cfg.NoFile), fmt.Sprintf("--ulimit=nproc=%d:%d", nproc, nproc),
		fmt.Sprintf("--memory=%d", cfg.MemoryBytes), fmt.Sprintf("--pids-limit=%d", cfg.Pids),
		"-v", dir+":"+dir+":ro", "--entrypoint", "/bin/cat", cfg.Image, dir+"/a.md")
	var ours, base []time.Duration
	for range benchRuns {
		start := time.Now()
		if got := content(b, call(b, r, grants, "read_file", args)); got != "hello\n" {
			b.Fatalf("read_file gave %q", got)
		}
		ours = append(ours, time.Since(start))

		start = time.Now()
		out, err := exec.Command(cli[0], cli[1:]...).CombinedOutput()
		if err != nil || string(out) != "hello\n" {
			b.Fatalf("%s: %v\n%s", strings.Join(cli, " "), err, out)
		}
		base = append(base, time.Since(start))
	}
	ReportLatency(b, ours, base)
}

// benchRuns is how many runs of each kind a latency benchmark measures,
// whatever b.N is: percentiles need a sample, and one pass takes seconds.
const benchRuns = 30

// ReportLatency puts the p50 and p95 of ours and of base (the podman CLI)
// on b, and their ratios.
func ReportLatency(b *testing.B, ours, base []time.Duration) {
	p := func(ds []time.Duration, q float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(ours, 0.5), "p50-ms")
	b.ReportMetric(p(ours, 0.95), "p95-ms")
	b.ReportMetric(p(base, 0.5), "cli-p50-ms")
	b.ReportMetric(p(base, 0.95), "cli-p95-ms")
	b.ReportMetric(p(ours, 0.5)/p(base, 0.5), "ratio-p50")
	b.ReportMetric(p(ours, 0.95)/p(base, 0.95), "ratio-p95")
	b.ReportMetric(0, "ns/op") // the figures above are the result
}
