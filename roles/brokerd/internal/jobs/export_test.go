package jobs

import (
	"io/fs"
	"time"
)

// CheckedOf is the latest due time the scheduler has dealt with for name,
// as it holds it in memory.
func CheckedOf(s *Scheduler, name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[name]
	if r == nil {
		return time.Time{}, false
	}
	return r.Checked.Time(), true
}

// ReadStateChecked reads the state file at path as New would: each job's
// latest due time dealt with, or the error that makes it damaged.
func ReadStateChecked(path string) (map[string]time.Time, error) {
	recs, err := readState(path)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for n, r := range recs {
		out[n] = r.Checked.Time()
	}
	return out, nil
}

// SetStateReadError makes reading the state file fail with err until the
// returned func is called.
func SetStateReadError(err error) (restore func()) {
	old := readStateBytes
	readStateBytes = func(path string) ([]byte, error) { return nil, &fs.PathError{Op: "open", Path: path, Err: err} }
	return func() { readStateBytes = old }
}
