package session

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/wire"
)

// fakeEnv, when set, makes this test binary a fake llama-server on that
// socket until its stdin closes: the benchmark runs the fake in its own
// process, so the fake's work (it renders and tokenizes the whole prompt of
// every request) and its garbage collection do not land in loopd's time.
const fakeEnv = "LOOPD_BENCH_FAKE_SOCKET"

func TestMain(m *testing.M) {
	if sock := os.Getenv(fakeEnv); sock != "" {
		serveBenchFake(sock)
		return
	}
	m.Run()
}

func serveBenchFake(sock string) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fake := fakellama.New(fakellama.Options{NCtx: 1 << 22, Script: func(n int, _ *fakellama.ChatRequest) fakellama.Reply {
		if n%3 == 1 {
			return call("clock", `{}`)
		}
		return text(fmt.Sprintf("Answer number %d: a short reply of about a dozen words.", n))
	}})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		fake.Close()
	}()
	fake.Serve(ln)
}

// BenchmarkSession1000 runs a session of 1,000 turns against the fake with
// zero-latency replies (every other turn makes a clock call first) and
// measures loopd's time per turn outside the model: the turn's wall time
// less the time spent in the model client's Chat (sending the body, the
// fake's work, reading and parsing the stream). What is left is loopd's
// own work: logging with fsync, rendering, hashing, tool calls. It reports
// the mean of the first and of the last 100 turns, so growth with the
// session's length shows, and the mean Chat time of the last 100 turns.
//
// "disk" keeps the home in the temporary directory, so every record's fsync
// is real; "tmpfs" keeps it in /dev/shm, where fsync costs nothing, so what
// is left is loopd's CPU work and any growth in it is not hidden by the
// disk's noise.
func BenchmarkSession1000(b *testing.B) {
	const turns = 1000
	for _, where := range []struct{ name, dir string }{{"disk", os.TempDir()}, {"tmpfs", "/dev/shm"}} {
		if _, err := os.Stat(where.dir); err != nil {
			continue
		}
		b.Run(where.name, func(b *testing.B) {
			var first, last, chat time.Duration
			runs := 0
			for b.Loop() {
				f, l, c := runSession(b, where.dir, turns)
				first, last, chat, runs = first+f, last+l, chat+c, runs+1
			}
			n := time.Duration(runs)
			b.ReportMetric(float64((first / n).Nanoseconds()), "ns/turn-first100")
			b.ReportMetric(float64((last / n).Nanoseconds()), "ns/turn-last100")
			b.ReportMetric(float64((chat / n).Nanoseconds()), "ns/turn-chat-last100")
		})
	}
}

// timedModel adds up the time spent in Chat.
type timedModel struct {
	m     Model
	spent time.Duration
}

func (t *timedModel) Chat(ctx context.Context, body ...[]byte) (*llama.Reply, error) {
	t0 := time.Now()
	r, err := t.m.Chat(ctx, body...)
	t.spent += time.Since(t0)
	return r, err
}

func runSession(b *testing.B, base string, turns int) (first, last, chat time.Duration) {
	b.Helper()
	dir, err := os.MkdirTemp(base, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	home := filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(home, "memory"), 0o700)
	os.WriteFile(CorePath(home), []byte(testCore), 0o600)

	sock := filepath.Join(dir, "infer.sock")
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeEnv+"="+sock)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Since(start) > 10*time.Second {
			b.Fatal("the fake did not start")
		}
	}

	client := llama.New(sock, 10*time.Second, 10*time.Second)
	defer client.Close()
	model := &timedModel{m: client}
	m := New(Config{Home: home, SystemPrompt: "You are a benchmark.", MaxSteps: 4, EpochPercent: 75,
		Model: model, Tools: &tools.Runner{}})
	defer m.Close()

	own := make([]time.Duration, turns)
	chats := make([]time.Duration, turns)
	var id *wire.SessionID
	for i := range turns {
		before := model.spent
		t0 := time.Now()
		var final wire.TurnEvent
		m.Say(context.Background(), id, fmt.Sprintf("Message %d from the owner.", i), func(ev wire.TurnEvent) {
			if s, ok := ev.(wire.TurnSession); ok && id == nil {
				sid := s.Session
				id = &sid
			}
			final = ev
		})
		if _, ok := final.(wire.TurnReply); !ok {
			b.Fatalf("turn %d: %#v", i, final)
		}
		chats[i] = model.spent - before
		own[i] = time.Since(t0) - chats[i]
	}
	return mean(own[:100]), mean(own[turns-100:]), mean(chats[turns-100:])
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}
