package audit

import (
	"fmt"
	"os"
	"path/filepath"

	"boxmaker/wire"
)

// Startup's part of keeping the head (head.go).

// readHead reads the head, if the writer keeps one.
func (w *Writer) readHead() (*Head, *HeadError, error) {
	if w.headPath == "" {
		return nil, nil, nil
	}
	return readHeadFor(w.headPath)
}

// judgeHead says how the log disagrees with the head: a damaged head
// (headErr already), a missing one while the log is not empty, or a log
// that does not hold the record the head names.
func (w *Writer) judgeHead(head *Head, headErr *HeadError, rep ChainReport) (*HeadError, error) {
	switch {
	case w.headPath == "" || headErr != nil:
		return headErr, nil
	case head != nil:
		return compareHead(w.headPath, *head, rep), nil
	}
	// No head file. An empty log is a first start; a log with anything in
	// it lost its head, which is what deleting the head along with the
	// log's last records would look like.
	names, err := logNames(w.dir)
	if err != nil {
		return nil, unavailable("listing "+w.dir, err)
	}
	for _, name := range names {
		st, err := os.Stat(filepath.Join(w.dir, name))
		if err != nil {
			return nil, unavailable("reading "+name, err)
		}
		if st.Size() > 0 {
			return missingHead(w.headPath, rep), nil
		}
	}
	if w.ranBefore != nil {
		if what := w.ranBefore(); what != "" {
			return &HeadError{Problem: wire.HeadMissing, What: fmt.Sprintf(
				"the log is empty and the head brokerd keeps outside it, %s, is missing, but brokerd has run here before (%s)",
				w.headPath, what)}, nil
		}
	}
	return nil, nil
}

// startHead writes the head durably and keeps it open for the commits. It
// first syncs the newest log files and the directory: a brokerd that died
// between a write and its sync can leave records that startup read from the
// page cache but that are not on disk, and the head must not name them.
func (w *Writer) startHead() error {
	if w.headPath == "" {
		return nil
	}
	if err := w.syncNewest(); err != nil {
		return err
	}
	f, err := createHead(w.headPath, Head{Next: w.seq, Hash: w.head})
	if err != nil {
		return err
	}
	w.headF = f
	return nil
}

// syncNewest syncs the newest log file, the newest one that is not empty
// (earlier ones were synced before the writer moved on from them), and the
// directory.
func (w *Writer) syncNewest() error {
	names, err := logNames(w.dir)
	if err != nil {
		return unavailable("listing "+w.dir, err)
	}
	for i := len(names) - 1; i >= 0; i-- {
		path := filepath.Join(w.dir, names[i])
		f, err := osOpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return unavailable("opening "+names[i], err)
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return unavailable("syncing "+names[i], err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() > 0 {
			break
		}
	}
	if err := syncDir(osOpenFile, w.dir); err != nil {
		return unavailable("syncing "+w.dir, err)
	}
	return nil
}
