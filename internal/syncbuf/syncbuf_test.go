package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: every write of many goroutines arrives whole
// (run with -race, as the gate does).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab\n"))
			}
		})
	}
	wg.Wait()
	if got := b.String(); len(got) != 8*100*3 || strings.Count(got, "ab\n") != 800 {
		t.Fatalf("%d bytes, %d whole writes", len(got), strings.Count(got, "ab\n"))
	}
}
