package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"boxmaker/wire"
)

// Options configure Open.
type Options struct {
	// Now stamps records; time.Now if nil. Tests move it across midnight.
	Now func() time.Time
	// AcceptBreak makes startup append an AcceptedBreak record for a chain
	// failure, and an AcceptedHead record for a log that does not hold the
	// head, instead of refusing to start (brokerd serve --accept-break).
	AcceptBreak bool
	// HeadFile is where the writer keeps the head (head.go), outside dir;
	// brokerd's is <home>/broker/audit-head. Empty: no head is kept or
	// checked (tests of the log alone).
	HeadFile string
	// RanBefore, when HeadFile is set, names what shows that brokerd has
	// run in this home before ("" when nothing does): with no head and an
	// empty log, that is a head deleted along with the log, not a first
	// start. brokerd's is its taint floor and session files.
	RanBefore func() string
	// OpenFile opens log files and the directory for syncing. If nil, it
	// is os.OpenFile, with log files opened for writing syncing by
	// fdatasync (file.go). Tests wrap it to fail writes or count syncs.
	OpenFile func(name string, flag int, perm fs.FileMode) (File, error)
}

// Entry describes a record that is on disk.
type Entry struct {
	Seq  uint64
	Time wire.Timestamp
	Hash wire.Hash32 // of its line: the next record's prev
	File string      // the file it is in
}

// Writer appends records to the log. It is safe for concurrent use.
//
// Group commit: a caller that finds the writer idle commits its own record
// at once, in its own goroutine (one write, one fsync, no hand-offs). Callers
// that arrive while a commit is under way queue their events; the committer
// goroutine then takes everything queued, writes it with one write and one
// fsync, and only then answers each caller. Only one commit runs at a time
// (busy), and only a commit assigns seq, so file order is seq order.
type Writer struct {
	dir  string
	now  func() time.Time
	open func(string, int, fs.FileMode) (File, error)
	lock *os.File

	mu     sync.Mutex
	queue  []*request
	busy   bool // a commit is under way
	closed bool
	err    error         // set once a write or sync failed; sticky
	wake   chan struct{} // capacity 1: "the queue may be non-empty, or busy ended"
	last   Head          // the last record synced (Head)
	done   chan struct{} // closed when the committer goroutine returns

	// Owned by whoever set busy (by Open before the committer starts).
	f     File
	name  string // the newest file: records never go to an older one
	seq   uint64
	head  wire.Hash32
	buf   []byte
	spare []*request

	headPath  string
	ranBefore func() string
	headF     *os.File // nil until startup has written the head durably
	headBuf   []byte
}

type request struct {
	event []byte
	entry Entry
	err   error
	done  chan struct{}
}

// Append writes ev as the next record and returns its seq once the record is
// fsynced. An error means the record may not be on disk; once a write has
// failed, every Append fails with ErrUnavailable.
func (w *Writer) Append(ev wire.AuditEvent) (uint64, error) {
	e, err := w.AppendEntry(ev)
	return e.Seq, err
}

// AppendEntry is Append, returning the whole Entry.
func (w *Writer) AppendEntry(ev wire.AuditEvent) (Entry, error) {
	if ev == nil {
		return Entry{}, errors.New("audit: nil event")
	}
	// Encoding here, in the caller's goroutine, keeps it out of the
	// committer's serial path.
	b, err := wire.Marshal(ev)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: %w", err)
	}
	r := &request{event: b, done: make(chan struct{})}
	w.mu.Lock()
	inline := false
	switch {
	case w.err != nil:
		err = w.err
	case w.closed:
		err = ErrClosed
	case !w.busy && len(w.queue) == 0:
		w.busy, inline = true, true
	default:
		w.queue = append(w.queue, r)
	}
	w.mu.Unlock()
	if err != nil {
		return Entry{}, err
	}
	if inline {
		w.commit([]*request{r})
		w.idle()
	} else {
		w.signal()
	}
	<-r.done
	return r.entry, r.err
}

// idle ends a commit made by a caller, and wakes the committer if callers
// queued meanwhile or Close is waiting for it.
func (w *Writer) idle() {
	w.mu.Lock()
	w.busy = false
	more := len(w.queue) > 0 || w.closed
	w.mu.Unlock()
	if more {
		w.signal()
	}
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Close commits what is already queued, stops the committer, waits for it
// and releases the lock.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closed = true
	w.mu.Unlock()
	w.signal()
	<-w.done
	return w.release()
}

// release closes the current file and the head (synced: it is off the hot
// path now) and drops the lock.
func (w *Writer) release() error {
	var err error
	if w.f != nil {
		err = w.f.Close()
		w.f = nil
	}
	if w.headF != nil {
		if serr := w.headF.Sync(); err == nil {
			err = serr
		}
		if cerr := w.headF.Close(); err == nil {
			err = cerr
		}
		w.headF = nil
	}
	if uerr := unlock(w.lock); err == nil {
		err = uerr
	}
	return err
}

// run is the committer goroutine: it commits what callers queued while
// another commit was under way.
func (w *Writer) run() {
	defer close(w.done)
	for range w.wake {
		for {
			w.mu.Lock()
			if w.busy {
				// A caller is committing; its idle will wake us.
				w.mu.Unlock()
				break
			}
			batch, closed := w.queue, w.closed
			if len(batch) > 0 {
				// Swap in the last batch's array, which is done with;
				// never the one just taken.
				w.queue, w.busy = w.spare[:0], true
			}
			w.mu.Unlock()
			if len(batch) == 0 {
				if closed {
					return
				}
				break
			}
			w.commit(batch)
			clear(batch)
			w.spare = batch
			w.mu.Lock()
			w.busy = false
			w.mu.Unlock()
		}
	}
}
