package jobs

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"boxmaker/wire"
)

// jobExt is the suffix of a job file; anything else in the directory (an
// editor's backup, a README) is ignored, as in the grants directory.
const jobExt = ".toml"

// Load reads every job file in dir (<dir>/<name>.toml), cron lines in
// local time. It returns the jobs, sorted by name, only if every file is
// valid; otherwise it returns every problem, sorted by file and line, and
// no job: running some jobs of a set the owner is still editing could run
// one with a half-written prompt. A missing dir is no jobs and no problem
// (jobs are optional); err is set only when dir exists but cannot be read.
func Load(dir string) ([]Job, []Problem, error) { return LoadIn(dir, time.Local) }

// LoadIn is Load with cron lines read in loc.
func LoadIn(dir string, loc *time.Location) ([]Job, []Problem, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	var jobs []Job
	var ps []Problem
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), jobExt)
		if !ok {
			continue
		}
		file := filepath.Join(dir, e.Name())
		if !wire.ValidID(stem) {
			ps = append(ps, Problem{File: file, Problem: fmt.Sprintf("%q is not a job name: 1 to 64 characters of a-z, 0-9 and '-' before .toml", stem)})
			continue
		}
		data, err := readJobFile(file)
		if err != nil {
			ps = append(ps, Problem{File: file, Problem: err.Error()})
			continue
		}
		j, jps := parseJob(file, stem, data, loc)
		if len(jps) > 0 {
			ps = append(ps, jps...)
			continue
		}
		jobs = append(jobs, j)
	}
	if len(ps) > 0 {
		slices.SortStableFunc(ps, func(a, b Problem) int {
			return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
		})
		return nil, ps, nil
	}
	slices.SortFunc(jobs, func(a, b Job) int { return strings.Compare(a.Name, b.Name) })
	return jobs, nil, nil
}

// readJobFile reads a regular file of at most MaxJobFileBytes. It opens
// without blocking and checks the type before reading, so that a FIFO named
// *.toml cannot stall brokerd's reload. It does not follow a symbolic link
// (issue 29, class 1): a link may lead to a file another user can write,
// and a dangling one would drop a job without a word.
func readJobFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("is a symbolic link; a job is read only from a regular file in the jobs directory itself")
	}
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file (%s)", st.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxJobFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", unwrapPath(err))
	}
	if len(data) > MaxJobFileBytes {
		return nil, fmt.Errorf("is larger than %d bytes", MaxJobFileBytes)
	}
	return data, nil
}

// unwrapPath drops the path os puts in its errors: the problem names the
// file already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
