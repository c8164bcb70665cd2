package audit

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if any goroutine of this package outlives the
// tests: every goroutine the package starts must have an owner that stops it.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := leftovers(time.Second); left != "" {
			fmt.Fprintf(os.Stderr, "goroutines still running after the tests:\n%s\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// leftovers describes this package's goroutines other than the one running
// TestMain, giving exiting ones up to wait to finish.
func leftovers(wait time.Duration) string {
	var left []string
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		left = left[:0]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "boxmaker/audit.") && !strings.Contains(g, "audit.TestMain") {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
	}
}
