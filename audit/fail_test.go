package audit

import (
	"errors"
	"syscall"
	"testing"
)

// TestWriterFailsClosed: a write that fails returns an error to its caller
// and every later one, and leaves a log that verifies (a torn tail at worst,
// which the next startup recovers).
func TestWriterFailsClosed(t *testing.T) {
	for name, arm := range map[string]func(h *hookFS){
		"write": func(h *hookFS) { h.failNext = syscall.EIO },
		"sync":  func(h *hookFS) { h.failSync = syscall.EIO },
	} {
		t.Run(name, func(t *testing.T) {
			dir, h, c := logDir(t), newHookFS(), newClock(day0)
			w, _ := openT(t, dir, c, Options{OpenFile: h.open})
			appendT(t, w, someEvent)
			h.mu.Lock()
			arm(h)
			h.mu.Unlock()
			if _, err := w.Append(someEvent); !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("failing Append: %v", err)
			}
			h.mu.Lock()
			h.failNext, h.failSync = nil, nil
			h.mu.Unlock()
			if _, err := w.Append(someEvent); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Append after a failure: %v", err)
			}
			closeT(t, w)
			rep, err := VerifyDir(dir)
			if err != nil || rep.Failure != nil {
				t.Fatalf("%v %v", err, rep.Failure)
			}
			// Startup recovers whatever the failed write left.
			w, srep := openT(t, dir, c, Options{})
			if name == "write" && srep.Recovered == nil {
				t.Fatal("the half-written line was not recovered")
			}
			appendT(t, w, someEvent)
			closeT(t, w)
			verifyOK(t, dir)
		})
	}
}
