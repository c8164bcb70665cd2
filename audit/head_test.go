package audit

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"boxmaker/wire"
)

func TestHeadFormat(t *testing.T) {
	for _, h := range []Head{{}, {Next: 1, Hash: wire.Sha256([]byte("x"))}, {Next: ^uint64(0), Hash: wire.Hash32{0xff}}} {
		b := appendHead(nil, h)
		if len(b) != headSize || !strings.HasPrefix(string(b), "audit-head v1 next=") {
			t.Fatalf("%q", b)
		}
		got, err := parseHead(b)
		if err != nil || got != h {
			t.Fatalf("parseHead(%q) = %+v, %v", b, got, err)
		}
		// Every change of a byte is damage, and so is every other length.
		for i := range b {
			for _, x := range []byte{1, 0x20, 0xff} {
				c := bytes.Clone(b)
				c[i] ^= x
				if _, err := parseHead(c); !errors.Is(err, errHeadDamaged) {
					t.Fatalf("byte %d ^ %#x: %v", i, x, err)
				}
			}
		}
		for _, c := range [][]byte{nil, b[:len(b)-1], append(bytes.Clone(b), '\n'), b[1:]} {
			if _, err := parseHead(c); !errors.Is(err, errHeadDamaged) {
				t.Fatalf("%q: %v", c, err)
			}
		}
	}
}

// headWatch wraps the log files' Sync: just before each sync it reads the
// head file, which must name no record beyond those a completed sync made
// durable; and it counts what each completed sync made durable.
type headWatch struct {
	t      *testing.T
	head   string
	mu     sync.Mutex
	synced uint64 // records durable: lines in the log when the last sync returned
	syncs  int
}

func (h *headWatch) open(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := osOpenFile(name, flag, perm)
	if err != nil || flag&os.O_WRONLY == 0 {
		return f, err
	}
	return watchedFile{f, h, name}, nil
}

type watchedFile struct {
	File
	h    *headWatch
	name string
}

func (f watchedFile) Sync() error {
	h := f.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if got, err := ReadHead(h.head); err == nil && got.Next > h.synced {
		h.t.Errorf("before a sync the head names record %d, but only %d records were synced", got.Next-1, h.synced)
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	b, err := os.ReadFile(f.name)
	if err != nil {
		return err
	}
	h.synced = uint64(bytes.Count(b, []byte{'\n'}))
	h.syncs++
	return nil
}

// TestHeadNeverLeads: the head is written only after the sync of the records
// it names has returned, for single callers and for group commits, and it
// names the last record once Append returns.
func TestHeadNeverLeads(t *testing.T) {
	dir := logDir(t)
	hw := &headWatch{t: t, head: filepath.Join(t.TempDir(), "broker", "audit-head")}
	w, _ := openT(t, dir, newClock(day0), Options{HeadFile: hw.head, OpenFile: hw.open})
	for i := range 5 {
		e, err := w.AppendEntry(decision("chat-1", uint64(i), wire.OutcomeAllowed{}))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ReadHead(hw.head); err != nil || got != (Head{Next: e.Seq + 1, Hash: e.Hash}) {
			t.Fatalf("after record %d the head is %+v, %v", e.Seq, got, err)
		}
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				if _, err := w.Append(decision("chat-2", uint64(g*100+i), wire.OutcomeAllowed{})); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	closeT(t, w)
	rep := verifyOK(t, dir)
	if got, err := ReadHead(hw.head); err != nil || got != (Head{Next: rep.NextSeq, Hash: *rep.Head}) {
		t.Fatalf("after Close the head is %+v, %v; the log's is %d %s", got, err, rep.NextSeq, rep.Head)
	}
	if hw.syncs < 6 {
		t.Fatalf("only %d syncs were watched", hw.syncs)
	}
}

// TestHeadWriteFailureFailsTheWriter: a head that can no longer be written
// would let the log be cut back to where it stopped, so the writer fails
// closed, as for a log write that fails.
func TestHeadWriteFailureFailsTheWriter(t *testing.T) {
	dir := logDir(t)
	head := filepath.Join(t.TempDir(), "audit-head")
	w, _ := openT(t, dir, newClock(day0), Options{HeadFile: head})
	appendT(t, w, decision("chat-1", 1, wire.OutcomeAllowed{}))
	w.headF.Close() // what an I/O error on the head's disk looks like from here
	if _, err := w.Append(decision("chat-1", 2, wire.OutcomeAllowed{})); !errors.Is(err, ErrUnavailable) ||
		!strings.Contains(err.Error(), "writing the head "+head) {
		t.Fatalf("Append: %v", err)
	}
	if _, err := w.Append(decision("chat-1", 3, wire.OutcomeAllowed{})); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("the next Append: %v", err)
	}
	w.headF = nil // closed above
	closeT(t, w)
}

// TestHeadAtStartup covers what brokerd's tests do not: a head in a
// directory that does not exist yet, a first start with neither log nor
// head, the head rewritten at every start, and a head that cannot be read.
func TestHeadAtStartup(t *testing.T) {
	dir := logDir(t)
	head := filepath.Join(t.TempDir(), "new", "broker", "audit-head")
	c := newClock(day0)
	w, _ := openT(t, dir, c, Options{HeadFile: head})
	if got, err := ReadHead(head); err != nil || got != (Head{}) {
		t.Fatalf("a first start: %+v, %v", got, err)
	}
	if _, _, err := Open(dir, Options{HeadFile: head}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second writer: %v", err)
	}
	e, err := w.AppendEntry(decision("chat-1", 1, wire.OutcomeAllowed{}))
	if err != nil {
		t.Fatal(err)
	}
	closeT(t, w)
	// Nothing to accept: the log holds its head.
	if _, _, err := Open(dir, Options{HeadFile: head, AcceptBreak: true, Now: c.Now}); !errors.Is(err, ErrNothingToAccept) {
		t.Fatalf("AcceptBreak: %v", err)
	}
	w, _ = openT(t, dir, c, Options{HeadFile: head})
	closeT(t, w)
	if got, err := ReadHead(head); err != nil || got != (Head{Next: e.Seq + 1, Hash: e.Hash}) {
		t.Fatalf("after a restart: %+v, %v", got, err)
	}
	// A head that exists but cannot be read refuses as unavailable.
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(head, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(dir, Options{HeadFile: head, Now: c.Now}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a head that is a directory: %v", err)
	}
}
