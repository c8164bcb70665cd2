package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"boxmaker/wire"
)

// commit writes a batch: every line with one write and one fsync per file (a
// batch that crosses midnight writes two files), then answers each caller.
func (w *Writer) commit(batch []*request) {
	w.buf = w.buf[:0]
	from := 0 // the first request whose line is in buf
	for i, r := range batch {
		ts := wire.TimestampOf(w.now())
		// Never back to an older file, even if the clock went back: files
		// are read in name order, and that must be the order they were
		// written in.
		if name := max(dayName(ts), w.name); name != w.name || w.f == nil {
			w.flush(batch[from:i])
			from = i
			if w.failed() == nil {
				if err := w.switchTo(name); err != nil {
					w.fail(err)
				}
			}
		}
		if w.failed() != nil {
			break
		}
		line, err := appendLine(w.buf, w.seq, ts, w.head, r.event)
		if err != nil {
			r.err = fmt.Errorf("audit: %w", err)
			continue
		}
		r.entry = Entry{Seq: w.seq, Time: ts, Hash: wire.Sha256(line[len(w.buf):]), File: w.name}
		w.buf = append(line, '\n')
		w.seq, w.head = w.seq+1, r.entry.Hash
	}
	w.flush(batch[from:])
}

// flush writes and syncs buf, then answers reqs, whose lines it holds: with
// their entries, or with the writer's failure. Nothing is ever truncated: a
// failed write may leave a torn line, which the next startup recovers.
func (w *Writer) flush(reqs []*request) {
	if len(w.buf) > 0 && w.failed() == nil {
		if _, err := w.f.Write(w.buf); err != nil {
			w.fail(unavailable("writing "+w.name, err))
		} else if err := w.f.Sync(); err != nil {
			w.fail(unavailable("syncing "+w.name, err))
		} else if err := w.writeHead(); err != nil {
			// The records are durable, but a head that stopped moving would
			// let the log be cut back to it unnoticed: fail closed.
			w.fail(unavailable("writing the head "+w.headPath, err))
		} else {
			w.setLast()
		}
	}
	w.buf = w.buf[:0]
	err := w.failed()
	for _, r := range reqs {
		if err != nil && r.err == nil {
			r.entry, r.err = Entry{}, err
		}
		close(r.done)
	}
}

// writeHead records the last line written as the head, once its sync has
// returned: one pwrite of a fixed-size record, not synced (head.go says why
// that can only lag). Before startup has made the head durable, it does
// nothing.
func (w *Writer) writeHead() error {
	if w.headF == nil {
		return nil
	}
	w.headBuf = appendHead(w.headBuf[:0], Head{Next: w.seq, Hash: w.head})
	_, err := w.headF.WriteAt(w.headBuf, 0)
	return err
}

// switchTo makes name the file records go to: the newest existing file, or a
// new one, created 0600 (0640 in a directory its group may read: see
// shareWithDirGroup) and made durable by syncing the directory.
func (w *Writer) switchTo(name string) error {
	path := filepath.Join(w.dir, name)
	var f File
	var err error
	if name == w.name {
		f, err = w.open(path, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	} else {
		f, err = w.open(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			err = shareWithDirGroup(w.dir, path)
		}
		if err == nil {
			if err = syncDir(w.open, w.dir); err != nil {
				_ = f.Close() // the writer is failing; the error that matters is err
			}
		}
	}
	if err != nil {
		return unavailable("opening "+name, err)
	}
	if w.f != nil {
		// Everything written to it is synced; a close error changes nothing.
		_ = w.f.Close()
	}
	w.f, w.name = f, name
	return nil
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *Writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// dayName is the file a record with time ts belongs in: its UTC date.
func dayName(ts wire.Timestamp) string { return ts.Time().Format(dayLayout) + ".jsonl" }

// shareWithDirGroup makes a new log file readable by the directory's group
// when the directory itself is (mode g+rx): deployed, audit/ belongs to
// the owner group (setgid), whose members run bxctl audit verify. The
// writer's umask (UMask=0077 in its unit) would otherwise leave the file
// 0600, so the mode is set explicitly. Nobody but brokerd ever writes.
func shareWithDirGroup(dir, path string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o050 != 0o050 {
		return nil
	}
	return os.Chmod(path, 0o640)
}
