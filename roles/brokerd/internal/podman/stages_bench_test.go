package podman_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/roles/brokerd/internal/serve"
	"boxmaker/roles/brokerd/internal/stages"
	"boxmaker/wire"
)

// stageRuns is how many calls of each kind BenchmarkCallStages makes.
const stageRuns = 40

// BenchmarkCallStages is issue 26's measure: read_file of a small file and
// shell "true", each a tool_request on broker.sock decided, recorded, run
// in a fresh container and answered, against the floor under them, a bare
// "runc run" of a prepared bundle (podmantest.Runc) that cats the same
// file; the three take turns, so that drift on a shared machine hits each.
// It prints each call's stage table (brokerd's own marks: decision and
// audit, mount-source checks, connect, create, attach, start, the
// toolkit's answer, removal, state write, result record, reply) and
// reports the p50s and their ratios to runc's (the target is at most 2).
//
//	just bench-calls, or go test -run '^$' -bench CallStages ./roles/brokerd/internal/podman
func BenchmarkCallStages(b *testing.B) {
	var mu sync.Mutex
	var last *stages.Clock
	bd := startBrokerd(b, func(o *serve.Options) {
		o.Stages = func(c *stages.Clock) { mu.Lock(); last = c; mu.Unlock() }
	})
	notes := readableDir(b, "a.md", "hello\n")
	for name, g := range map[string]string{
		"read.toml":  fmt.Sprintf("tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [%q]\n", notes),
		"shell.toml": "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n",
	} {
		if err := os.WriteFile(filepath.Join(bd.grants, name), []byte(g), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	floor := podmantest.RuncBundle(b, notes, "/bin/cat", notes+"/a.md")
	kinds := []struct {
		name, tool, args, want string
	}{
		{"read_file", "read_file", `{"path":"` + notes + `/a.md"}`, "hello\n"},
		{"shell", "shell", `{"command":"true"}`, "(no output)"},
	}
	spans := make([][][]stages.Span, len(kinds))
	times := make([][]time.Duration, len(kinds)+1)
	for i := range stageRuns {
		for k, kind := range kinds {
			sid, _ := wire.NewSessionID("bench-" + kind.name[:4])
			start := time.Now()
			msg := bd.call(b, wire.ToolRequest{Session: sid, Call: wire.CallID(i + 1), Tool: kind.tool, Arguments: kind.args})
			times[k] = append(times[k], time.Since(start))
			if r, ok := msg.(wire.ResultResponse); !ok || r.Content != kind.want {
				b.Fatalf("%s: %#v", kind.name, msg)
			}
			mu.Lock()
			spans[k] = append(spans[k], last.Spans())
			mu.Unlock()
		}
		start := time.Now()
		if out, err := floor.Run(); err != nil || string(out) != "hello\n" {
			b.Fatalf("runc run: %v\n%s", err, out)
		}
		times[len(kinds)] = append(times[len(kinds)], time.Since(start))
	}
	floorP50 := stages.Ms(stages.Quantile(times[len(kinds)], 0.5))
	for k, kind := range kinds {
		p50 := stages.Ms(stages.Quantile(times[k], 0.5))
		// Printed, not logged: go test cuts a benchmark's log to a few lines.
		fmt.Printf("%s: p50 %.1f ms end to end, %.2fx runc run's %.1f ms; its stages:\n%s", kind.name, p50, p50/floorP50, floorP50, stages.Table(spans[k]))
		b.ReportMetric(p50, kind.name+"-p50-ms")
		b.ReportMetric(p50/floorP50, kind.name+"/runc-p50")
	}
	b.ReportMetric(floorP50, "runc-p50-ms")
	b.ReportMetric(0, "ns/op")
}
