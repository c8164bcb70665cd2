package serve

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/audit"
	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/roles/brokerd/internal/runner/runnertest"
	"boxmaker/wire"
)

// BenchmarkOwnerAnswerToRecord is brokerd's share of issue 14's speed
// figure: from the owner_answer frame written on gatewayd's connection to
// the Approval record synced. The sync is seen by a hook on the log file
// (syncClock: the writer's own fdatasync, then the time): the first sync
// that ends after the frame is written is the Approval record's, since the
// Decision record's was before the call was pending and the Result
// record's comes after. x-fsync is that time over one bare 300-byte
// write+fsync in the audit log's directory, taking turns with it (the
// disk's speed drifts); each figure is the median over turns. ended-x-fsync
// is the same up to the approval_ended that brokerd sends once the record
// is written (a new connection and a frame later). os.TempDir must be on a
// real disk.
func BenchmarkOwnerAnswerToRecord(b *testing.B) {
	dir, err := os.MkdirTemp("", "bg")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "home")
	cfg, err := config.Parse("brokerd.toml", []byte("[paths]\nhome = \""+home+"\"\ngrants = \""+filepath.Join(dir, "grants")+
		"\"\nsecrets = \""+filepath.Join(dir, "secrets")+"\"\n[sockets]\ngateway = \""+filepath.Join(home, "run", "broker-gateway", "gateway.sock")+"\"\n"), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(cfg.Paths.Grants, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Paths.Grants, "a.toml"), []byte(grantAsk), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Sockets.Gateway), 0o700); err != nil {
		b.Fatal(err)
	}
	g := gatewaytest.Listen(b, cfg.Sockets.Gateway)
	clock := &syncClock{}
	srv, err := Start(Options{Config: cfg, Runtime: &runnertest.Recording{Output: runner.Output{Content: "x"}}, Stderr: io.Discard,
		AuditOpenFile: clock.open})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Stop() })
	bare, err := os.OpenFile(filepath.Join(home, "audit", "bare-fsync"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bare.Close() })
	line := make([]byte, 300)
	line[299] = '\n'
	fsync := func() {
		if _, err := bare.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := bare.Sync(); err != nil {
			b.Fatal(err)
		}
	}

	seen := 0 // messages of g already looked at
	call := uint64(0)
	// one makes a call pending, has it posted, and times the owner's answer
	// to its record's sync and to its approval_ended; the call's run and
	// result are not timed.
	one := func() (record, ended time.Duration) {
		call++
		req := wire.ToolRequest{Session: sid(b, "bench-1"), Call: wire.CallID(call), Tool: "read_file", Arguments: `{"path":"/data/ask/x"}`}
		c := dial(b, cfg.Sockets.Broker)
		defer c.Close()
		if err := wire.WriteEnvelope(c, wire.Request(7, req)); err != nil {
			b.Fatal(err)
		}
		p, ok := c.next(b).Msg.(wire.PendingResponse)
		if !ok {
			b.Fatal("no pending frame")
		}
		r := g.Request(b)
		r.Send(b, false, wire.ApprovalPosted{Post: postID})
		t0 := time.Now()
		r.Send(b, true, wire.OwnerAnswer{Answer: wire.Approved, By: ownerID, Post: postID})
		_, i := g.Wait(b, seen, "approval_ended", func(m wire.Message) bool {
			e, ok := m.(wire.ApprovalEnded)
			return ok && e.Approval == p.Approval
		})
		ended = time.Since(t0)
		seen = i + 1
		if _, ok := c.next(b).Msg.(wire.ResultResponse); !ok {
			b.Fatal("the approved call did not run")
		}
		synced, ok := clock.firstAfter(t0)
		if !ok {
			b.Fatal("no sync after the answer")
		}
		return synced.Sub(t0), ended
	}
	one() // warm up: the first call creates the session's files

	const turns = 20
	var ratios, endedRatios, fsyncNs, recordNs []float64
	var total time.Duration
	b.ResetTimer()
	for turn := range turns {
		start, n := time.Now(), 0
		for time.Since(start) < 25*time.Millisecond {
			fsync()
			n++
		}
		perFsync := time.Since(start).Seconds() / float64(n)
		k := b.N / turns
		if turn < b.N%turns {
			k++
		}
		var rec, end time.Duration
		for range k {
			r, e := one()
			rec, end = rec+r, end+e
		}
		total += rec
		if k > 0 {
			perRec, perEnd := rec.Seconds()/float64(k), end.Seconds()/float64(k)
			ratios, endedRatios = append(ratios, perRec/perFsync), append(endedRatios, perEnd/perFsync)
			fsyncNs, recordNs = append(fsyncNs, perFsync*1e9), append(recordNs, perRec*1e9)
		}
	}
	b.StopTimer()
	// ns/op is the answer to the record only, not the setup around it.
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
	if len(ratios) > 0 {
		b.ReportMetric(middle(recordNs), "record-ns")
		b.ReportMetric(middle(fsyncNs), "fsync-ns")
		b.ReportMetric(middle(ratios), "x-fsync")
		b.ReportMetric(middle(endedRatios), "ended-x-fsync")
	}
}

// syncClock opens the audit log's files as the writer does (a log file's
// Sync is fdatasync, a directory's fsync) and notes when each sync ends.
type syncClock struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *syncClock) open(name string, flag int, perm fs.FileMode) (audit.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return clockedFile{f, c, flag&(os.O_WRONLY|os.O_RDWR) != 0}, nil
}

// firstAfter is the first sync to end after t.
func (c *syncClock) firstAfter(t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := len(c.times)
	for i > 0 && c.times[i-1].After(t) {
		i--
	}
	if i == len(c.times) {
		return time.Time{}, false
	}
	return c.times[i], true
}

type clockedFile struct {
	*os.File
	c        *syncClock
	datasync bool
}

func (f clockedFile) Sync() error {
	var err error
	if f.datasync {
		for err = unix.EINTR; err == unix.EINTR; {
			err = unix.Fdatasync(int(f.Fd()))
		}
	} else {
		err = f.File.Sync()
	}
	now := time.Now()
	f.c.mu.Lock()
	f.c.times = append(f.c.times, now)
	f.c.mu.Unlock()
	return err
}

func middle(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
