package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// The writer against the floor: a bare loop of write and fsync of lines of
// the same size, on the same disk, measured in the same run. x-bare is the
// writer's records per second over the bare loop's.

func BenchmarkAppend1(b *testing.B)  { benchAppend(b, 1, false) }
func BenchmarkAppend32(b *testing.B) { benchAppend(b, 32, false) }

// The same with the head kept (head.go), as brokerd runs it.
func BenchmarkAppend1Head(b *testing.B)  { benchAppend(b, 1, true) }
func BenchmarkAppend32Head(b *testing.B) { benchAppend(b, 32, true) }

// BenchmarkHeadWrite is what keeping the head adds to each commit: encoding
// the head and one pwrite, with no sync.
func BenchmarkHeadWrite(b *testing.B) {
	dir := benchDir(b)
	w, _, err := Open(filepath.Join(dir, "audit"), Options{HeadFile: filepath.Join(dir, "broker", "audit-head")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ResetTimer()
	for range b.N {
		if err := w.writeHead(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchAppend(b *testing.B, writers int, head bool) {
	dir := benchDir(b)
	ev := decision("chat-1758", 41, wire.OutcomeAllowed{})
	evb, err := wire.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	line, err := appendLine(nil, 1000, wire.TimestampOf(day0), wire.Hash32{}, evb)
	if err != nil {
		b.Fatal(err)
	}
	bare, err := os.OpenFile(filepath.Join(dir, "bare"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()
	var opts Options
	if head {
		opts.HeadFile = filepath.Join(dir, "broker", "audit-head")
	}
	w, _, err := Open(filepath.Join(dir, "audit"), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	// The disk's speed drifts (other work shares it), so the bare loop and
	// the writer take turns, and x-bare is the median over turns of the
	// writer's rate over the bare loop's in the turn before.
	const turns = 20
	ratios := make([]float64, 0, turns)
	var bareN int
	var bareTime, writerTime time.Duration
	b.ResetTimer()
	for turn := range turns {
		n, d := bareLoop(b, bare, len(line)+1, 25*time.Millisecond)
		start := time.Now()
		k := share(b.N, turns, turn)
		appendN(b, w, ev, k, writers)
		wd := time.Since(start)
		bareN, bareTime, writerTime = bareN+n, bareTime+d, writerTime+wd
		if k > 0 {
			ratios = append(ratios, (float64(k)/wd.Seconds())/(float64(n)/d.Seconds()))
		}
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(float64(b.N)/writerTime.Seconds(), "records/s")
	b.ReportMetric(float64(bareN)/bareTime.Seconds(), "bare-records/s")
	b.ReportMetric(ratios[len(ratios)/2], "x-bare")
	b.ReportMetric(float64(len(line)+1), "bytes/record")
}

// share is part i of n split k ways.
func share(n, k, i int) int {
	s := n / k
	if i < n%k {
		s++
	}
	return s
}

// appendN appends n records from the given number of goroutines at once.
func appendN(b *testing.B, w *Writer, ev wire.AuditEvent, n, writers int) {
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for range share(n, writers, g) {
				if _, err := w.Append(ev); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// bareLoop writes and fsyncs lines of size bytes to f for about d.
func bareLoop(b *testing.B, f *os.File, size int, d time.Duration) (int, time.Duration) {
	line := append(bytes.Repeat([]byte{'x'}, size-1), '\n')
	n, start := 0, time.Now()
	for ; time.Since(start) < d; n++ {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	return n, time.Since(start)
}
