package redact_test

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/redact"
)

// toolOutput is about 1 MiB of what a shell call prints: log lines with
// timestamps, words, numbers and hex ids, and base64 blocks wrapped at 76.
// leaks puts the key in that many places, in assorted forms.
func toolOutput(leaks int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the request to upstream failed retrying after backoff connection reset by peer " +
		"status ok deploy build cache hit miss worker started stopped token refreshed config loaded region")
	var b strings.Builder
	every := 0
	if leaks > 0 {
		every = (1 << 20) / leaks
	}
	next := every / 2
	for line := 0; b.Len() < 1<<20; line++ {
		if every > 0 && b.Len() >= next {
			next += every
			switch rng.IntN(4) {
			case 0:
				b.WriteString("token=" + key + "\n")
			case 1:
				b.WriteString(base64.StdEncoding.EncodeToString([]byte("x"+key+"\n")) + "\n")
			case 2:
				h := hex.EncodeToString([]byte(key + "\n"))
				b.WriteString(h[:60] + "\n" + h[60:] + "\n")
			case 3:
				b.WriteString("GET /api?key=" + key + "&page=2\n")
			}
		}
		if line%50 == 49 {
			blob := make([]byte, 570)
			for i := range blob {
				blob[i] = byte(rng.IntN(256))
			}
			s := base64.StdEncoding.EncodeToString(blob)
			for i := 0; i < len(s); i += 76 {
				b.WriteString(s[i:min(i+76, len(s))] + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "2026-09-17T08:%02d:%02d.%03dZ INFO id=%016x", rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.Uint64())
		for range 4 + rng.IntN(8) {
			b.WriteString(" " + words[rng.IntN(len(words))])
		}
		fmt.Fprintf(&b, " n=%d\n", rng.IntN(100000))
	}
	return b.String()
}

// BenchmarkRedact1MiB redacts a 1 MiB tool output with a 32-byte secret,
// and in the same iterations times strings.Contains of the secret over the
// output without leaks (so that it reads all of it): redact-ns/op and
// contains-ns/op are medians, x-contains the median of the iterations'
// ratios. The two alternate, so that a machine shared with other work
// slows both alike; ns/op counts both.
func BenchmarkRedact1MiB(b *testing.B) {
	clean := toolOutput(0)
	for _, leaks := range []int{0, 16} {
		text := toolOutput(leaks)
		raw := []byte(text)
		r := redact.New("key", []byte(key))
		if got := strings.Count(string(r.Bytes(raw)), "[secret:key]"); got != leaks {
			b.Fatalf("%d markers, want %d", got, leaks)
		}
		for _, kind := range []string{"Bytes", "String"} {
			b.Run(fmt.Sprintf("%s/leaks=%d", kind, leaks), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				var base, took, ratio []float64
				found := 1
				for b.Loop() {
					t0 := time.Now()
					if strings.Contains(clean, key) {
						found++
					}
					t1 := time.Now()
					if kind == "Bytes" {
						found += len(r.Bytes(raw))
					} else {
						found += len(r.String(text))
					}
					t2 := time.Now()
					base, took = append(base, float64(t1.Sub(t0))), append(took, float64(t2.Sub(t1)))
					ratio = append(ratio, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
				}
				b.ReportMetric(median(took), "redact-ns/op")
				b.ReportMetric(median(base), "contains-ns/op")
				b.ReportMetric(median(ratio), "x-contains")
				if found == 0 {
					b.Fatal("nothing")
				}
			})
		}
	}
}

func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}
