package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"boxmaker/wire"
)

// StartupReport says what Open found and did.
type StartupReport struct {
	// Records counts the lines that verified: the newest file's, or the
	// whole log's if FullCheck.
	Records uint64
	// FullCheck: the whole log was verified, because AcceptBreak was given
	// or the check of the newest file did not come out clean.
	FullCheck bool
	// Recovered is the torn final line that startup kept, completed with a
	// newline and followed with a Recovery record.
	Recovered *Location
	// Accepted is the failure that the AcceptedBreak record startup wrote
	// accepts.
	Accepted *ChainFailure
	// AcceptedHead is the disagreement with the head that the AcceptedHead
	// record startup wrote accepts.
	AcceptedHead *HeadError
	// NextSeq is the seq the next record gets.
	NextSeq uint64
}

// Lines is what brokerd prints about its startup, one line each.
func (r StartupReport) Lines() []string {
	var out []string
	if r.Recovered != nil {
		out = append(out, "audit: recovered a torn final line", "see docs/runbook.md#audit-recovered")
	}
	if f := r.Accepted; f != nil {
		out = append(out, fmt.Sprintf("audit: accepted the break at %s: %s", f.Location, wire.Printable(f.What)))
	}
	if h := r.AcceptedHead; h != nil {
		out = append(out, "audit: accepted a log that does not hold its head: "+wire.Printable(h.What))
	}
	return out
}

// Open takes the log in dir (created 0700 if missing) for writing, following
// M3a §5 "Startup": (1) lock, refusing if another writer holds the lock;
// (2) verify the newest file, resumed from the lines before it; (3) complete
// a torn final line and append a Recovery record; (4) refuse a broken chain,
// or with opts.AcceptBreak append an AcceptedBreak record for it; (5) refuse
// AcceptBreak when there is nothing to accept. With opts.HeadFile it also
// refuses, before writing anything, a log that does not hold the head kept
// there (or AcceptBreak appends an AcceptedHead record for it), and makes
// the head durable before it returns. Errors match ErrAlreadyRunning,
// ErrChainBroken (a *BrokenError), ErrHeadMismatch (a *HeadError),
// ErrNothingToAccept and ErrUnavailable with errors.Is; their text ends with
// the runbook entry to read.
func Open(dir string, opts Options) (*Writer, StartupReport, error) {
	if err := makeDir(dir); err != nil {
		return nil, StartupReport{}, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, StartupReport{}, err
	}
	w := &Writer{dir: dir, now: opts.Now, open: opts.OpenFile, lock: lock, headPath: opts.HeadFile, ranBefore: opts.RanBefore,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if w.now == nil {
		w.now = time.Now
	}
	if w.open == nil {
		w.open = osOpenFile
	}
	rep, err := w.startup(opts.AcceptBreak)
	if err != nil {
		_ = w.release() // the startup error is the one to report
		return nil, rep, err
	}
	w.setLast()
	go w.run()
	return w, rep, nil
}

// makeDir creates the log directory if it is missing, durably.
func makeDir(dir string) error {
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := syncDir(osOpenFile, filepath.Dir(dir)); err != nil {
		return fmt.Errorf("audit: syncing %s: %w", filepath.Dir(dir), err)
	}
	return nil
}

// startup runs steps 2 to 5 with the lock held and the committer not yet
// started, so it commits its own records; then it makes the head durable.
func (w *Writer) startup(accept bool) (StartupReport, error) {
	var out StartupReport
	head, headErr, err := w.readHead()
	if err != nil {
		return out, err
	}
	var watch *uint64
	if head != nil && head.Next > 0 {
		seq := head.Next - 1
		watch = &seq
	}
	rep, full, err := w.check(accept, watch)
	if err != nil {
		return out, err
	}
	if headErr, err = w.judgeHead(head, headErr, rep); err != nil {
		return out, err
	}
	// A log that does not hold its head is not appended to, not even a
	// Recovery record, unless the owner said so.
	if headErr != nil && !accept {
		if f := rep.Failure; f != nil {
			return out, errors.Join(&BrokenError{Failure: *f}, headErr)
		}
		return out, headErr
	}
	if t := rep.TornTail; t != nil {
		if err := w.recoverTorn(rep); err != nil {
			return out, err
		}
		loc := *t
		out.Recovered = &loc
		// Check again: the report must now describe the log as it is, with
		// the Recovery record in it.
		if rep, full, err = w.check(accept, nil); err != nil {
			return out, err
		}
		if rep.TornTail != nil {
			return out, fmt.Errorf("%w: %s is still torn after recovery", ErrUnavailable, rep.TornTail)
		}
	}
	out.Records, out.FullCheck = rep.Records, full
	switch f := rep.Failure; {
	case f != nil && !accept:
		return out, &BrokenError{Failure: *f}
	case f != nil:
		if !rep.brk.ok {
			return out, fmt.Errorf("%w: no seq is left for an accepted break after %s", ErrUnavailable, f.Location)
		}
		w.seq, w.head = rep.brk.seq, rep.brk.prev
		if err := w.appendNow(wire.AcceptedBreakEvent{File: f.File, Line: f.Line, LastGood: f.LastGood}); err != nil {
			return out, err
		}
		acc := *f
		out.Accepted = &acc
	case accept && headErr == nil:
		return out, errNothingToAccept
	default:
		w.seq = rep.NextSeq
		if rep.Head != nil {
			w.head = *rep.Head
		}
	}
	if headErr != nil {
		if err := w.appendNow(headErr.event()); err != nil {
			return out, err
		}
		out.AcceptedHead = headErr
	}
	out.NextSeq = w.seq
	return out, w.startHead()
}

// recoverTorn ends the torn line with a newline (keeping every byte of it)
// and appends a Recovery record that describes it, chained from the line
// before it.
func (w *Writer) recoverTorn(rep ChainReport) error {
	name := rep.TornTail.File
	f, err := w.open(filepath.Join(w.dir, name), os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return unavailable("opening "+name, err)
	}
	_, err = f.Write([]byte{'\n'})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return unavailable("completing the torn line of "+name, err)
	}
	w.seq, w.head = rep.torn.seq, rep.torn.prev
	return w.appendNow(wire.RecoveryEvent{TornBytes: rep.torn.bytes, TornSha256: rep.torn.sha})
}

// appendNow commits one record from startup's goroutine.
func (w *Writer) appendNow(ev wire.AuditEvent) error {
	b, err := wire.Marshal(ev)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	r := &request{event: b, done: make(chan struct{})}
	w.commit([]*request{r})
	return r.err
}
