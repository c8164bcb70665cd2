package policy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"

	"boxmaker/wire"
)

// MaxGrantFileBytes bounds one grant file. Grants are a few hundred bytes;
// the bound only keeps a stray large file from being read at every call.
const MaxGrantFileBytes = 1 << 20

// grantExt is the suffix of a grant file; anything else in the directory is
// ignored (M3a §3, "Files").
const grantExt = ".toml"

// GrantSet is a valid set of grants, read from one directory at one moment.
// Only LoadGrants builds one, and only when every file is valid.
type GrantSet struct {
	grants []grant // sorted by id
}

// grant is one valid grant file, with what matching needs precomputed.
type grant struct {
	id   string
	sha  wire.Hash32
	tool Tool
	g    wire.Grant
}

// Len is the number of grants in the set.
func (s *GrantSet) Len() int { return len(s.grants) }

// grantFile is one *.toml file as read: the bytes, or why they could not be.
type grantFile struct {
	name    string
	data    []byte
	readErr error
}

// LoadGrants reads every *.toml file in dir and checks it by the eight
// loading rules. It returns the set only if every file is valid; otherwise it
// returns every problem, sorted by file and line. err is set only when dir
// itself cannot be read, and then nothing else is returned.
//
// Nothing is cached: each call reads the directory and every file again.
func LoadGrants(dir string) (*GrantSet, []wire.GrantProblem, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: cannot read the grants directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), grantExt) {
			names = append(names, e.Name())
		}
	}
	results := checkAll(dir, names)
	set, problems := collect(len(results), func(i int) (string, grant, []problem) {
		return names[i], results[i].g, results[i].ps
	})
	return set, problems, nil
}

// checked is one file's grant, or its problems.
type checked struct {
	g  grant
	ps []problem
}

// filesPerWorker is the least work worth a goroutine: below it, starting
// one costs more than it saves.
const filesPerWorker = 8

// checkAll reads and checks each named file. Decoding is most of what a
// decision costs and the files are independent, so large sets are spread
// over the available cores; every worker is joined before checkAll returns.
func checkAll(dir string, names []string) []checked {
	out := make([]checked, len(names))
	one := func(i int) {
		data, err := readGrantFile(filepath.Join(dir, names[i]))
		g, ps := checkFile(grantFile{name: names[i], data: data, readErr: err})
		out[i] = checked{g, ps}
	}
	workers := min(runtime.GOMAXPROCS(0), len(names)/filesPerWorker)
	if workers <= 1 {
		for i := range names {
			one(i)
		}
		return out
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(names); i += workers {
				one(i)
			}
		})
	}
	wg.Wait()
	return out
}

// readGrantFile opens without blocking and refuses anything but a regular
// file, so a FIFO or device named *.toml cannot stall every decision.
func readGrantFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxGrantFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxGrantFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxGrantFileBytes)
	}
	return data, nil
}

// collect gathers the valid grants of n checked files or, if any file has a
// problem, every problem: one invalid file invalidates the whole set, because
// a skipped deny grant would turn into an allow wherever another grant
// matches.
func collect(n int, check func(i int) (name string, g grant, ps []problem)) (*GrantSet, []wire.GrantProblem) {
	set := &GrantSet{}
	var problems []wire.GrantProblem
	for i := range n {
		name, g, ps := check(i)
		for _, p := range ps {
			problems = append(problems, p.forFile(name))
		}
		if len(ps) == 0 {
			set.grants = append(set.grants, g)
		}
	}
	if len(problems) > 0 {
		sortProblems(problems)
		return nil, problems
	}
	sort.Slice(set.grants, func(i, j int) bool { return set.grants[i].id < set.grants[j].id })
	return set, nil
}

// sortProblems orders by file, then line (no line first); the order of
// problems on the same line is kept.
func sortProblems(ps []wire.GrantProblem) {
	line := func(p wire.GrantProblem) uint64 {
		if p.Line == nil {
			return 0
		}
		return *p.Line
	}
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return line(ps[i]) < line(ps[j])
	})
}
