package podman_test

import (
	"fmt"
	"os"
	"path/filepath"
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
// toolkit's answer, its exit seen, state write, result record, reply)
// and reports the p50s and their ratios to runc's (the target is at most
// 2). It does so four ways: each call's container created at the call
// ("fresh") or made ahead after the call before ("ahead", ahead.go), and
// the calls spaced as in a chat or back to back (callStages).
//
//	just bench-calls, or go test -run '^$' -bench CallStages ./roles/brokerd/internal/podman
func BenchmarkCallStages(b *testing.B) {
	rec := newLastClock()
	bd := startBrokerd(b, func(o *serve.Options) { o.Stages = rec.set })
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
	kinds := []callKind{
		{"read_file", "read_file", `{"path":"` + notes + `/a.md"}`, "hello\n"},
		{"shell", "shell", `{"command":"true"}`, "(no output)"},
	}
	for _, mode := range []struct {
		name          string
		ahead, spaced bool
	}{{"fresh-spaced", false, true}, {"fresh-back-to-back", false, false}, {"ahead-spaced", true, true}, {"ahead-back-to-back", true, false}} {
		bd.rt.MakeAhead(mode.ahead)
		spans, times := callStages(b, bd, rec, floor, kinds, mode.spaced)
		floorP50 := stages.Ms(stages.Quantile(times[len(kinds)], 0.5))
		for k, kind := range kinds {
			p50 := stages.Ms(stages.Quantile(times[k], 0.5))
			// Printed, not logged: go test cuts a benchmark's log to a few lines.
			fmt.Printf("%s, %s: p50 %.1f ms end to end, %.2fx runc run's %.1f ms; its stages:\n%s",
				kind.name, mode.name, p50, p50/floorP50, floorP50, stages.Table(spans[k]))
			b.ReportMetric(p50, kind.name+"-"+mode.name+"-p50-ms")
			b.ReportMetric(p50/floorP50, kind.name+"-"+mode.name+"/runc-p50")
		}
		b.ReportMetric(floorP50, "runc-"+mode.name+"-p50-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// lastClock hands over the clock of each call brokerd answers. brokerd
// gives it once the reply is written, so after the client has read it:
// spans waits for it rather than take the call before's.
type lastClock struct{ clocks chan *stages.Clock }

func newLastClock() *lastClock { return &lastClock{clocks: make(chan *stages.Clock, 1)} }

func (l *lastClock) set(c *stages.Clock) { l.clocks <- c }

func (l *lastClock) spans(b *testing.B) []stages.Span {
	select {
	case c := <-l.clocks:
		return c.Spans()
	case <-time.After(10 * time.Second):
		b.Fatal("brokerd gave no clock for the call")
		return nil
	}
}

type callKind struct{ name, tool, args, want string }

// callStages makes stageRuns calls of each kind, taking turns with the
// runc floor, and returns each call's stage spans and the end-to-end
// times, the floor's last. spaced waits, before each call and each runc
// run, until the runtime does nothing in the background (the containers
// it makes ahead, the removals after calls), as a chat's model turn lets
// it; otherwise the calls come back to back and that work competes with
// the next call and the floor for the machine.
func callStages(b *testing.B, bd *brokerd, rec *lastClock, floor *podmantest.Runc, kinds []callKind, spaced bool) ([][][]stages.Span, [][]time.Duration) {
	spans := make([][][]stages.Span, len(kinds))
	times := make([][]time.Duration, len(kinds)+1)
	quiet := func() {
		if spaced {
			bd.rt.WaitQuiet()
		}
	}
	for range stageRuns {
		for k, kind := range kinds {
			quiet()
			sid, _ := wire.NewSessionID("bench-" + kind.name[:4])
			start := time.Now()
			msg := bd.call(b, wire.ToolRequest{Session: sid, Call: wire.CallID(len(times[k]) + 1), Tool: kind.tool, Arguments: kind.args})
			times[k] = append(times[k], time.Since(start))
			if r, ok := msg.(wire.ResultResponse); !ok || r.Content != kind.want {
				b.Fatalf("%s: %#v", kind.name, msg)
			}
			spans[k] = append(spans[k], rec.spans(b))
		}
		quiet()
		start := time.Now()
		if out, err := floor.Run(); err != nil || string(out) != "hello\n" {
			b.Fatalf("runc run: %v\n%s", err, out)
		}
		times[len(kinds)] = append(times[len(kinds)], time.Since(start))
	}
	return spans, times
}
