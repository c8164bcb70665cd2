package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// The state file, <home>/broker/jobs.json, is what the scheduler remembers
// across restarts: per job, the latest due time it has dealt with (for
// catch-up) and the latest run (for `bxctl jobs`). It is written whole, in
// wire's canonical JSON, atomically (a temporary file, fsync, rename,
// fsync of the directory) at every run's start and end, so a crash leaves
// the old file or the new one, never a mix.

// stateVersion is the file's format; another value is a damaged file.
const stateVersion = 1

type stateFile struct {
	Version int           `json:"version"`
	Jobs    []stateRecord `json:"jobs"`
}

type stateRecord struct {
	Name string `json:"name"`
	// Checked is the latest due time dealt with (run or skipped), or when
	// the job was first seen or the scheduler last started: a due time
	// after it that has passed was missed.
	Checked wire.Timestamp `json:"checked"`
	Last    *stateRun      `json:"last"`
}

type stateRun struct {
	Due     wire.Timestamp  `json:"due"`
	Started wire.Timestamp  `json:"started"`
	Ended   *wire.Timestamp `json:"ended"`
	Trigger Trigger         `json:"trigger"`
	Outcome string          `json:"outcome"`
}

// outcomeInterrupted replaces "running" in a file read at start: that run
// ended with the brokerd that started it.
const outcomeInterrupted = "failed: brokerd stopped before the run ended"

// errDamaged marks a state file that is there but is not what brokerd
// writes: bytes that do not decode, or a link, directory or FIFO at its
// name. Other read errors (EIO, EACCES, EMFILE) are not damage: the file
// may be fine, so it is neither moved aside nor written over.
var errDamaged = errors.New("damaged")

type damage struct{ error }

func (d damage) Unwrap() []error { return []error{d.error, errDamaged} }

// readState reads the state file. A missing file is (nil, nil): a fresh
// start. A damaged file is an error that errors.Is errDamaged; any other
// failure is an error that says the file could not be read.
func readState(path string) (map[string]*stateRecord, error) {
	data, err := readStateFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f stateFile
	if err := wire.Unmarshal(data, &f); err != nil {
		return nil, damage{fmt.Errorf("%s: %w", path, err)}
	}
	if f.Version != stateVersion {
		return nil, damage{fmt.Errorf("%s: version %d, want %d", path, f.Version, stateVersion)}
	}
	recs := make(map[string]*stateRecord, len(f.Jobs))
	for i := range f.Jobs {
		r := f.Jobs[i]
		switch {
		case !wire.ValidID(r.Name):
			return nil, damage{fmt.Errorf("%s: %q is not a job name", path, r.Name)}
		case recs[r.Name] != nil:
			return nil, damage{fmt.Errorf("%s: job %q twice", path, r.Name)}
		case r.Last != nil && (r.Last.Trigger < Scheduled || r.Last.Trigger > Manual):
			return nil, damage{fmt.Errorf("%s: job %q: no trigger", path, r.Name)}
		}
		if r.Last != nil && r.Last.Ended == nil && r.Last.Outcome == outcomeRunning {
			r.Last.Outcome = outcomeInterrupted
		}
		recs[r.Name] = &r
	}
	return recs, nil
}

// writeState replaces the file at path with recs, atomically.
func writeState(path string, recs map[string]*stateRecord) error {
	f := stateFile{Version: stateVersion, Jobs: make([]stateRecord, 0, len(recs))}
	for _, r := range recs {
		f.Jobs = append(f.Jobs, *r)
	}
	slices.SortFunc(f.Jobs, func(a, b stateRecord) int { return strings.Compare(a.Name, b.Name) })
	data, err := wire.Marshal(f)
	if err != nil {
		return err
	}
	return writeAtomic(path, data)
}

// writeAtomic writes data to path through a temporary file in the same
// directory, syncing the file before the rename and the directory after.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
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

// maxDamagedCopies bounds the names setAsideDamaged tries.
const maxDamagedCopies = 100

// setAsideDamaged moves a damaged state file (or the link, directory or
// FIFO at its name) to <path>.damaged, or to <path>.damaged.N when older
// copies are there: the next write must not destroy what the owner may
// want to look at, and neither may a later damage. It says what it did.
// Only brokerd writes in its state directory (one brokerd per directory,
// by the audit lock), so a name seen free stays free until the rename.
func setAsideDamaged(path string, why error) []string {
	lines := []string{
		fmt.Sprintf("jobs: the state file cannot be read: %v", why),
		"jobs: no catch-up runs this start (what ran before is unknown); jobs are scheduled normally from now",
	}
	aside := freeName(path + ".damaged")
	if aside == "" {
		lines = append(lines, fmt.Sprintf("jobs: could not move it aside: %s.damaged to .damaged.%d are all taken; it will be overwritten", path, maxDamagedCopies-1))
	} else if err := os.Rename(path, aside); err != nil {
		lines = append(lines, fmt.Sprintf("jobs: could not move it to %s: %v; it will be overwritten", aside, err))
	} else {
		if err := syncDir(filepath.Dir(path)); err != nil {
			lines = append(lines, fmt.Sprintf("jobs: syncing %s: %v", filepath.Dir(path), err))
		}
		lines = append(lines, "jobs: the damaged file is kept as "+aside)
	}
	return append(lines, runbook.See("jobs-state-damaged"))
}

// freeName is base, or base.N for the first N from 1 with nothing at that
// name, or "" when every name up to maxDamagedCopies is taken (or cannot
// be looked at: a name it cannot see is not free).
func freeName(base string) string {
	for i := range maxDamagedCopies {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s.%d", base, i)
		}
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
	}
	return ""
}
