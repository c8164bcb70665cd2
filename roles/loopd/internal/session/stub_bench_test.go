package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/wire"
)

// stubModel answers at once, in process, with fixed timings that always
// meet the cache expectation: it isolates loopd's own work completely.
type stubModel struct{ n int }

func (s *stubModel) Chat(_ context.Context, body ...[]byte) (*llama.Reply, error) {
	s.n++
	content := fmt.Sprintf("Answer number %d: a short reply of about a dozen words.", s.n)
	t := llama.Timings{CacheN: uint64(s.n * 100), PromptN: 10, PredictedN: 20}
	if s.n%3 == 1 {
		return &llama.Reply{ToolCalls: []wire.ToolCall{{ID: fmt.Sprint("c", s.n), Name: "clock", Arguments: "{}"}}, FinishReason: "tool_calls", Timings: t}, nil
	}
	return &llama.Reply{Content: &content, FinishReason: "stop", Timings: t}, nil
}

// BenchmarkSession1000Stub is BenchmarkSession1000 with an in-process
// model that costs nothing, in /dev/shm: what is left is loopd's own work
// and nothing else, first and last 100 turns of 1,000.
func BenchmarkSession1000Stub(b *testing.B) {
	base := "/dev/shm"
	if _, err := os.Stat(base); err != nil {
		base = os.TempDir()
	}
	var first, last time.Duration
	runs := 0
	for b.Loop() {
		dir, _ := os.MkdirTemp(base, "stub")
		home := filepath.Join(dir, "home")
		os.MkdirAll(filepath.Join(home, "memory"), 0o700)
		os.WriteFile(CorePath(home), []byte(testCore), 0o600)
		m := New(Config{Home: home, SystemPrompt: "You are a benchmark.", MaxSteps: 4, EpochPercent: 75,
			Model: &stubModel{}, Tools: &tools.Runner{}})
		const turns = 1000
		own := make([]time.Duration, turns)
		var id *wire.SessionID
		for i := range turns {
			t0 := time.Now()
			m.Say(context.Background(), id, fmt.Sprintf("Message %d from the owner.", i), func(ev wire.TurnEvent) {
				if s, ok := ev.(wire.TurnSession); ok && id == nil {
					sid := s.Session
					id = &sid
				}
			})
			own[i] = time.Since(t0)
		}
		m.Close()
		os.RemoveAll(dir)
		first += mean(own[:100])
		last += mean(own[turns-100:])
		runs++
	}
	b.ReportMetric(float64(first.Nanoseconds()/int64(runs)), "ns/turn-first100")
	b.ReportMetric(float64(last.Nanoseconds()/int64(runs)), "ns/turn-last100")
}
