// Package sessionlog reads and writes a session's log,
// <home>/sessions/<id>/<epoch>.jsonl: one wire.LogRecord per line, append
// only, synced after every record. Directories are 0700 and files 0600: the
// log holds everything the owner and the tools said.
//
// Two small side files sit beside each epoch's log, both append only:
//
//   - <epoch>.torn lists torn final lines that were kept and closed with a
//     newline ("line N bytes B sha256 H"), so a later read skips exactly
//     those lines instead of calling the log damaged. It plays the part of
//     the audit log's Recovery record, which LogRecord lacks.
//   - <epoch>.sent describes each request loopd sent (see Sent), so that a
//     restarted loopd can check that its rebuilt request is the one it sent
//     and knows how many tokens the server's cache should still hold.
package sessionlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"boxmaker/wire"
)

// Dir is the directory of session id under home.
func Dir(home string, id wire.SessionID) string {
	return filepath.Join(home, "sessions", id.String())
}

// CheckDir checks that the directory of session id is a directory, not a
// link to one (issue 29, class 1): the opens of its files refuse a link
// only at the last name, so a link here would have them all read and
// append elsewhere. Only "no such name" is fs.ErrNotExist. (sessions/
// itself may be a link the operator made, to keep sessions on another
// disk: loopd makes it only if it is missing.)
func CheckDir(home string, id wire.SessionID) error {
	dir := Dir(home, id)
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory loopd made (it is %s); %s", dir, Kind(fi.Mode()), seeDamaged)
	}
	return nil
}

// Path is the log file of epoch of session id.
func Path(home string, id wire.SessionID, epoch wire.Epoch) string {
	return filepath.Join(Dir(home, id), strconv.FormatUint(uint64(epoch), 10)+".jsonl")
}

// ErrExists is returned by CreateDir when the session directory already exists.
var ErrExists = errors.New("sessionlog: session directory exists")

// CreateDir makes the directory of a new session (and sessions/ if needed),
// failing with ErrExists if it is already there, so two new sessions never
// share a directory.
func CreateDir(home string, id wire.SessionID) error {
	parent := filepath.Join(home, "sessions")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("sessionlog: %w", err)
	}
	if err := os.Mkdir(Dir(home, id), 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return ErrExists
		}
		return fmt.Errorf("sessionlog: %w", err)
	}
	return syncDir(parent)
}

// Writer appends records to one epoch's log.
type Writer struct {
	f    *os.File
	path string
	buf  []byte
}

// OpenWriter opens path for appending, creating it (0600) if needed; a new
// file's directory is synced so the file survives a crash.
func OpenWriter(path string) (*Writer, error) {
	_, statErr := os.Lstat(path)
	f, err := openOwn(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sessionlog: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &Writer{f: f, path: path}, nil
}

// Append writes rec as one line in one write and syncs it. A record that
// cannot be encoded is an error before anything is written.
func (w *Writer) Append(rec wire.LogRecord) error {
	line, err := wire.Marshal(rec)
	if err != nil {
		return fmt.Errorf("sessionlog: %w", err)
	}
	w.buf = append(append(w.buf[:0], line...), '\n')
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("sessionlog: %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sessionlog: %s: %w", w.path, err)
	}
	return nil
}

// Path is the file the writer appends to.
func (w *Writer) Path() string { return w.path }

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sessionlog: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sessionlog: sync %s: %w", dir, err)
	}
	return nil
}

// appendSynced appends data to path (0600) and syncs it.
func appendSynced(path string, data []byte) error {
	w, err := OpenWriter(path)
	if err != nil {
		return err
	}
	_, err = w.f.Write(data)
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sessionlog: %s: %w", path, err)
	}
	return nil
}
