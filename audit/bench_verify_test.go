package audit

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// benchDir is a directory on the work disk for benchmarks: /var/tmp rather
// than os.TempDir, which may be a tmpfs where fsync costs nothing.
func benchDir(b *testing.B) string {
	dir, err := os.MkdirTemp("/var/tmp", "audit-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// benchLog is a valid log of about 100 MB, made once per run.
var benchLog = sync.OnceValue(func() []byte {
	const size = 100 << 20
	rng := rand.New(rand.NewPCG(7, 8))
	g := &benchEvents{rng: rng}
	var out []byte
	var prev wire.Hash32
	ts := wire.TimestampOf(day0)
	for seq := uint64(0); len(out) < size; seq++ {
		ev, err := wire.Marshal(g.next(seq))
		if err != nil {
			panic(err)
		}
		start := len(out)
		if out, err = appendLine(out, seq, ts, prev, ev); err != nil {
			panic(err)
		}
		prev = wire.Sha256(out[start:])
		out = append(out, '\n')
		ts += wire.Timestamp(rng.IntN(50))
	}
	return out
})

// benchEvents makes a plausible mix: mostly decisions (most allowed, some
// denied, a few asks, each approved a little later) whose arguments are
// paths or commands, each allowed one followed by its result.
type benchEvents struct {
	rng  *rand.Rand
	asks []wire.ApprovalEvent
}

func (g *benchEvents) next(seq uint64) wire.AuditEvent {
	rng := g.rng
	session := "chat-1758-" + string(rune('a'+rng.IntN(26)))
	call := seq + 1
	switch k := rng.IntN(20); {
	case k == 0 && len(g.asks) > 0:
		a := g.asks[0]
		g.asks = g.asks[1:]
		return a
	case k < 10:
		// Arguments are JSON text, so their quotes are escaped in the line.
		args := `{"path":"/home/kyle/notes/` + words(rng, 40) + `.md"}`
		if k < 3 {
			args = `{"command":"` + words(rng, 300) + `","cwd":"/home/kyle/scratch"}`
		}
		var out wire.DecisionRecord = wire.OutcomeAllowed{}
		switch {
		case k == 9:
			out = wire.OutcomeAsk{}
			g.asks = append(g.asks, approval(session, call, seq))
		case k >= 7:
			out = wire.OutcomeDenied{Reason: wire.NoGrant}
		}
		d := decision(session, call, out)
		d.Arguments = args
		return d
	}
	return result(session, call, seq-1)
}

func BenchmarkVerify(b *testing.B) {
	log := benchLog()
	lines := bytes.Split(log[:len(log)-1], []byte{'\n'})
	var rep ChainReport
	benchAgainstSha(b, log, func() {
		v := NewChainVerifier()
		v.File("2026-09-17.jsonl")
		for i, l := range lines {
			v.Line(l, i == len(lines)-1, true)
		}
		rep = v.Finish()
	})
	if rep.Failure != nil || rep.Records != uint64(len(lines)) || rep.slow != 0 {
		b.Fatalf("bench log does not verify: %+v", rep.Failure)
	}
}

func BenchmarkVerifyDir(b *testing.B) {
	log := benchLog()
	dir := benchDir(b)
	if err := os.WriteFile(filepath.Join(dir, "2026-09-17.jsonl"), log, 0o600); err != nil {
		b.Fatal(err)
	}
	benchAgainstSha(b, log, func() {
		rep, err := VerifyDir(dir)
		if err != nil || rep.Failure != nil {
			b.Fatalf("%v %+v", err, rep.Failure)
		}
	})
}

// benchAgainstSha runs verify b.N times, each followed by plain SHA-256 over
// the same bytes, so that both see the same load on the machine, and reports
// verify's speed as a ratio to SHA-256's (x-sha256). It also reports the
// ratio to hashing each line on its own (x-sha256-lines), the least any
// verifier of this chain must do, and the CPU time verify takes per byte
// over all cores (cpu-ns/B: other work on the machine can keep a second
// core from it, and this shows what it needs).
func benchAgainstSha(b *testing.B, log []byte, verify func()) {
	lines := bytes.Split(log[:len(log)-1], []byte{'\n'})
	var verifyTime, shaTime, linesTime, verifyCPU time.Duration
	for b.Loop() {
		start, cpu := time.Now(), cpuTime()
		verify()
		verifyTime, verifyCPU = verifyTime+time.Since(start), verifyCPU+cpuTime()-cpu
		start = time.Now()
		sha256.Sum256(log)
		shaTime += time.Since(start)
		start = time.Now()
		for _, l := range lines {
			sha256.Sum256(l)
		}
		linesTime += time.Since(start)
	}
	n := float64(b.N) * float64(len(log))
	b.ReportMetric(n/verifyTime.Seconds()/1e6, "verify-MB/s")
	b.ReportMetric(n/shaTime.Seconds()/1e6, "sha256-MB/s")
	b.ReportMetric(shaTime.Seconds()/verifyTime.Seconds(), "x-sha256")
	b.ReportMetric(linesTime.Seconds()/verifyTime.Seconds(), "x-sha256-lines")
	b.ReportMetric(float64(verifyCPU)/n, "cpu-ns/B")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// words is ASCII text of up to n bytes with the odd non-ASCII letter.
func words(rng *rand.Rand, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz      -_./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 0, n)
	for range rng.IntN(n + 1) {
		if rng.IntN(100) == 0 {
			b = append(b, "é"...)
			continue
		}
		b = append(b, letters[rng.IntN(len(letters))])
	}
	return string(b)
}

func BenchmarkParseOnly(b *testing.B) {
	log := benchLog()
	lines := bytes.Split(log[:len(log)-1], []byte{'\n'})
	b.SetBytes(int64(len(log)))
	var r lineRec
	var d parser
	for b.Loop() {
		for _, l := range lines {
			if !d.parseFast(l, &r) {
				b.Fatal("refused")
			}
		}
	}
}

func BenchmarkShaLines(b *testing.B) {
	log := benchLog()
	lines := bytes.Split(log[:len(log)-1], []byte{'\n'})
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		for _, l := range lines {
			wire.Sha256(l)
		}
	}
}

// BenchmarkPrepare is a worker's share of VerifyDir: hash and parse.
func BenchmarkPrepare(b *testing.B) {
	log := benchLog()
	lines := bytes.Split(log[:len(log)-1], []byte{'\n'})
	b.SetBytes(int64(len(log)))
	var p prepared
	var d parser
	for b.Loop() {
		for _, l := range lines {
			p.prepare(&d, l)
		}
	}
}
