package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"boxmaker/wire"
)

// Floor is the taint floor (issue 12, item 3; docs/decisions.md, "The taint
// floor"): the highest taint any session has reached, kept by brokerd in
// <home>/broker/floor.json as {"taint":"secret"}. Every decision uses a
// session's taint raised to the floor, so a compromised loopd, which holds
// every session's content, cannot carry a secret out under another session
// id, fresh or old. Only brokerd raises it, after a result and before the
// result reaches loopd; nothing in brokerd lowers it: the owner does, by
// hand, with brokerd stopped (docs/runbook.md#taint-floor).
//
// The level is read from the file once, when brokerd starts, and kept in
// memory: brokerd is the file's only writer (one brokerd per home, held by
// the audit log's lock), so a read per decision could only see what brokerd
// itself wrote, at the cost of a system call on every call's path.
type Floor struct {
	path string

	mu      sync.Mutex
	level   wire.DataClass // in memory; never lower than onDisk
	onDisk  wire.DataClass // as last written or read
	err     error          // the file could not be read: every call is denied
	missing bool           // there was no file when it was opened
}

// floorFile is the floor's content, in wire's canonical JSON.
type floorFile struct {
	Taint wire.DataClass `json:"taint"`
}

// OpenFloor reads the floor at path. A missing file is the lowest floor,
// private, where every session starts. A file that exists but cannot be
// read or parsed is kept as an error (Err): guessing could lower it.
func OpenFloor(path string) *Floor {
	f := &Floor{path: path, level: wire.Private, onDisk: wire.Private}
	data, err := readFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.missing = true
	case err != nil:
		f.err = fmt.Errorf("state: the taint floor: %w", err)
	default:
		var ff floorFile
		if err := wire.Unmarshal(data, &ff); err != nil || !ff.Taint.Valid() {
			if err == nil {
				err = errors.New("not a data class")
			}
			f.err = fmt.Errorf("state: the taint floor %s: %w", path, err)
			break
		}
		f.level, f.onDisk = ff.Taint, ff.Taint
	}
	return f
}

// Path is the floor file's path.
func (f *Floor) Path() string { return f.path }

// Err is why the floor file could not be read, or nil.
func (f *Floor) Err() error { return f.err }

// Level is the floor, or the error that makes every call be denied.
func (f *Floor) Level() (wire.DataClass, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.level, f.err
}

// Raise raises the floor to c if c is higher, and returns the floor. The
// new floor is on disk when Raise returns nil (written like a session's
// state: tmp, fsync, rename, fsync the directory); if the write fails it
// still holds in memory, so no later decision goes below it, and the next
// Raise writes it again.
func (f *Floor) Raise(c wire.DataClass) (wire.DataClass, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.level, f.err
	}
	f.level = max(f.level, c)
	if f.level == f.onDisk {
		return f.level, nil
	}
	if err := writeAtomic(f.path, floorFile{Taint: f.level}); err != nil {
		return f.level, fmt.Errorf("state: the taint floor: %w", err)
	}
	f.onDisk = f.level
	return f.level, nil
}

// writeAtomic replaces path with v's canonical JSON: write path.tmp, fsync,
// rename over path, fsync the directory.
func writeAtomic(path string, v any) error {
	data, err := wire.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("syncing %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// Highest is the highest taint of the session files in the store's
// directory; a file that cannot be read counts as secret, what it may have
// held. brokerd starts a floor that has no file yet from it, so that
// sessions from before the floor existed are not forgotten.
func (s *Store) Highest() (wire.DataClass, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("state: %w", err)
	}
	high := wire.Private
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		sid, err := wire.NewSessionID(id)
		if err != nil {
			continue // not a file brokerd writes
		}
		st, _, err := s.Read(sid)
		if err != nil {
			return wire.Secret, nil
		}
		high = max(high, st.Taint)
	}
	return high, nil
}

// Missing reports whether the floor had no file when it was opened.
func (f *Floor) Missing() bool { return f.missing }
