package audit

import (
	"sync"
	"testing"
)

// TestWriterHead: Head names the last record on disk, as the verifier finds
// it, at every point: an empty log, after concurrent appends (read while
// they run: it never goes back), across midnight, and after a restart.
func TestWriterHead(t *testing.T) {
	dir, c := logDir(t), newClock(day0)
	w, _ := openT(t, dir, c, Options{HeadFile: dir + "-head"})
	if h := w.Head(); h != (Head{}) {
		t.Fatalf("empty log: head %+v", h)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		var last uint64
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := w.Head().Next
			if n < last {
				t.Errorf("head went back from %d to %d", last, n)
				return
			}
			last = n
		}
	})
	var writers sync.WaitGroup
	for range 8 {
		writers.Go(func() {
			for range 10 {
				if _, err := w.Append(someEvent); err != nil {
					t.Error(err)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	check := func(want uint64) {
		t.Helper()
		rep := verifyOK(t, dir)
		if h := w.Head(); h.Next != want || rep.NextSeq != want || rep.Head == nil || h.Hash != *rep.Head {
			t.Fatalf("head %+v; the log's next seq %d, last hash %v; want next %d", h, rep.NextSeq, rep.Head, want)
		}
	}
	check(80)
	c.Set(day0.AddDate(0, 0, 1))
	appendT(t, w, someEvent)
	check(81)
	before := w.Head()
	closeT(t, w)
	w, _ = openT(t, dir, c, Options{HeadFile: dir + "-head"})
	defer closeT(t, w)
	if h := w.Head(); h != before {
		t.Fatalf("after a restart: head %+v, want %+v", h, before)
	}
	check(81)
}
