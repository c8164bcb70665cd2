// Package state keeps each session's taint and untrusted flag (M3a §4) in
// <home>/broker/sessions/<id>.json, written only by brokerd, and serialises
// the calls of one session so that no two can lose each other's update.
package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/ownfile"
	"boxmaker/wire"
)

// file is the state file's content: exactly {"taint":"private","untrusted":false}
// in wire's canonical JSON, with no newline.
type file struct {
	Taint     wire.DataClass `json:"taint"`
	Untrusted bool           `json:"untrusted"`
}

// Initial is the state of a session that has no file: private, trusted.
var Initial = policy.State{Taint: wire.Private}

// Store reads and writes the state files in one directory.
type Store struct {
	dir string

	mu    sync.Mutex
	locks map[wire.SessionID]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; the entry is dropped at zero
}

// New returns a Store for dir, which MakeDir creates.
func New(dir string) *Store {
	return &Store{dir: dir, locks: map[wire.SessionID]*sessionLock{}}
}

// MakeDir creates the directory 0700 if it is missing.
func (s *Store) MakeDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// Lock takes the session's lock and returns the function that releases it.
// brokerd holds it from reading a session's state to writing it, so a call
// is decided with every earlier call's taint.
func (s *Store) Lock(id wire.SessionID) (unlock func()) {
	s.mu.Lock()
	l := s.locks[id]
	if l == nil {
		l = &sessionLock{}
		s.locks[id] = l
	}
	l.refs++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, id)
		}
		s.mu.Unlock()
	}
}

func (s *Store) path(id wire.SessionID) string { return filepath.Join(s.dir, id.String()+".json") }

// Read returns the session's state, and whether its file exists. A missing
// file is Initial; a file that cannot be read or parsed is an error, and the
// caller denies the call (state_unreadable): guessing could treat a secret
// session as private.
func (s *Store) Read(id wire.SessionID) (policy.State, bool, error) {
	data, err := readFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Initial, false, nil
	}
	if err != nil {
		return policy.State{}, true, fmt.Errorf("state: %w", err)
	}
	var f file
	if err := wire.Unmarshal(data, &f); err != nil {
		return policy.State{}, true, fmt.Errorf("state: %s: %w", s.path(id), err)
	}
	return policy.State{Taint: f.Taint, Untrusted: f.Untrusted}, true, nil
}

// Write replaces the session's state atomically: write <id>.json.tmp, fsync,
// rename over <id>.json, fsync the directory. Either the old or the new state
// is on disk, whatever happens.
func (s *Store) Write(id wire.SessionID, st policy.State) error {
	data, err := wire.Marshal(file{Taint: st.Taint, Untrusted: st.Untrusted})
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	final := s.path(id)
	tmp := final + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("state: syncing %s: %w", s.dir, err)
	}
	return nil
}

// stateFileMax bounds what is read of a state file; a valid one is under
// 50 bytes, and a larger one is damaged.
const stateFileMax = 512

// readFile reads a state file: ownfile.Read, so that a dangling link, a
// link elsewhere, a directory or a FIFO is refused, never "no file".
func readFile(path string) ([]byte, error) { return ownfile.Read(path, stateFileMax) }

// writeSynced makes path anew and writes data to it, synced. Whatever was
// left at the name (a crash's temporary file, or a link planted there) is
// removed first and the file is made with O_EXCL and O_NOFOLLOW, so the
// write never goes through a link to another file.
func writeSynced(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Raise is the state after a result of a grant with class and untrusted:
// taint rises to class, untrusted is set by an untrusted grant, and neither
// ever goes down.
func Raise(st policy.State, class wire.DataClass, untrusted bool) policy.State {
	return policy.State{Taint: max(st.Taint, class), Untrusted: st.Untrusted || untrusted}
}
