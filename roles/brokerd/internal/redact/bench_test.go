package redact_test

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
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

// BenchmarkRedact1MiB redacts a 1 MiB tool output with a 32-byte secret and
// times strings.Contains of the secret over the same text in the same run:
// x-contains is how many times longer redaction takes than that floor.
func BenchmarkRedact1MiB(b *testing.B) {
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
				found := 0
				start := time.Now()
				for range b.N {
					if strings.Contains(text, key) {
						found++
					}
				}
				base := time.Since(start)
				b.ResetTimer()
				start = time.Now()
				for range b.N {
					if kind == "Bytes" {
						found += len(r.Bytes(raw))
					} else {
						found += len(r.String(text))
					}
				}
				took := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "contains-ns/op")
				b.ReportMetric(float64(took)/float64(base), "x-contains")
				if found == 0 {
					b.Fatal("nothing")
				}
			})
		}
	}
}
