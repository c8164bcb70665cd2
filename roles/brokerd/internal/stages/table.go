package stages

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Table is the stage table of many calls: for each stage, in the order of
// which they were first marked, its p50 and mean in milliseconds and its
// share of the mean call. A stage some call did not mark counts as 0 there.
func Table(runs [][]Span) string {
	if len(runs) == 0 {
		return "no calls\n"
	}
	var order []string
	for _, run := range runs {
		for _, s := range run {
			if !slices.Contains(order, s.Stage) {
				order = append(order, s.Stage)
			}
		}
	}
	per := make(map[string][]time.Duration)
	var total time.Duration
	for _, run := range runs {
		took := map[string]time.Duration{}
		for _, s := range run {
			took[s.Stage] += s.Took
			total += s.Took
		}
		for _, st := range order {
			per[st] = append(per[st], took[st])
		}
	}
	mean := total / time.Duration(len(runs))
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %9s %9s %6s\n", "stage", "p50 ms", "mean ms", "share")
	for _, st := range order {
		var sum time.Duration
		for _, d := range per[st] {
			sum += d
		}
		m := sum / time.Duration(len(runs))
		fmt.Fprintf(&b, "%-10s %9.2f %9.2f %5.1f%%\n", st, Ms(Quantile(per[st], 0.5)), Ms(m), 100*float64(m)/float64(max(mean, 1)))
	}
	fmt.Fprintf(&b, "%-10s %9s %9.2f %5.1f%%\n", "call", "", Ms(mean), 100.0)
	return b.String()
}

// Quantile is the q-quantile of ds (nearest rank, below), 0 for none.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
