package audit

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// hookFS is an Options.OpenFile that counts writes and syncs per file and
// fails them on demand.
type hookFS struct {
	mu       sync.Mutex
	writes   map[string]int
	syncs    map[string]int
	lines    map[string]int // newlines written
	synced   map[string]int // newlines written before the last good sync
	failNext error          // the next write writes half and returns this
	failSync error          // every sync returns this
	slowSync func()         // called inside every sync
}

func newHookFS() *hookFS {
	return &hookFS{writes: map[string]int{}, syncs: map[string]int{}, lines: map[string]int{}, synced: map[string]int{}}
}

func (h *hookFS) open(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &hookFile{h: h, name: filepath.Base(name), f: f}, nil
}

func (h *hookFS) count(m map[string]int, name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return m[name]
}

type hookFile struct {
	h    *hookFS
	name string
	f    *os.File
}

func (f *hookFile) Write(b []byte) (int, error) {
	h := f.h
	h.mu.Lock()
	fail := h.failNext
	h.failNext = nil
	h.writes[f.name]++
	h.mu.Unlock()
	if fail != nil {
		n, _ := f.f.Write(b[:len(b)/2])
		return n, fail
	}
	n, err := f.f.Write(b)
	h.mu.Lock()
	h.lines[f.name] += bytes.Count(b[:n], []byte{'\n'})
	h.mu.Unlock()
	return n, err
}

func (f *hookFile) Sync() error {
	h := f.h
	h.mu.Lock()
	fail, slow := h.failSync, h.slowSync
	lines := h.lines[f.name]
	h.syncs[f.name]++
	h.mu.Unlock()
	if slow != nil {
		slow()
	}
	if fail != nil {
		return fail
	}
	if err := f.f.Sync(); err != nil {
		return err
	}
	h.mu.Lock()
	h.synced[f.name] = lines
	h.mu.Unlock()
	return nil
}

func (f *hookFile) Close() error { return f.f.Close() }
