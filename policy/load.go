package policy

import (
	"bytes"
	"runtime"
	"sort"
	"sync"

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
	// secretLine is the line of the secret key (0: unknown or none), where
	// a secret that cannot be read is reported.
	secretLine uint64
}

// Len is the number of grants in the set.
func (s *GrantSet) Len() int { return len(s.grants) }

// grantFile is one *.toml file as read: the bytes, or why they could not be.
type grantFile struct {
	name    string
	data    []byte
	readErr error
}

// LoadGrants reads every *.toml file in dir and checks it by the loading
// rules: the spec's eight, and rule 9, no path reaching dir itself or any of
// protected's paths (nil: only dir). It returns the set only if every file
// is valid; otherwise it returns every problem, sorted by file and line. err
// is set only when dir itself cannot be read, and then nothing else is
// returned.
//
// Nothing is cached: each call reads the directory and every file again.
func LoadGrants(dir string, protected *Protected) (*GrantSet, []wire.GrantProblem, error) {
	return NewGrantsDir(dir, protected).Load()
}

// CheckGrants is GrantsDir.Check for dir, protected as LoadGrants has it,
// with check as the secret check (nil: secrets are checked by name only,
// by the loading rules). It is the offline `bxctl grants check`.
func CheckGrants(dir string, protected *Protected, check func(use SecretUse) error) ([]wire.GrantProblem, error) {
	g := NewGrantsDir(dir, protected)
	g.SetSecretCheck(check)
	return g.Check()
}

// checked is one file's grant, or its problems.
type checked struct {
	g  grant
	ps []problem
}

// parsed is a file's bytes as last read and what checking them gave.
type parsed struct {
	data []byte
	c    checked
}

// filesPerWorker is the least work worth a goroutine: below it, starting
// one costs more than it saves.
const filesPerWorker = 8

// checkAll reads and checks each named file of the open directory dirfd.
// A file whose bytes equal those in last (the previous read's results, by
// name) is not decoded again; it returns each file's result and the bytes
// behind it, and scratch, the read buffer, grown as needed. Decoding is most of what a decision costs and the files are
// independent, so large sets are spread over the available cores; every
// worker is joined before checkAll returns.
func checkAll(dirfd int, dir string, names []string, last map[string]parsed, scratch []byte) ([]parsed, []byte) {
	out := make([]parsed, len(names))
	each := func(from, step int, scratch []byte) []byte {
		for i := from; i < len(names); i += step {
			data, err := readAt(dirfd, dir, names[i], scratch)
			if err != nil {
				g, ps := checkFile(grantFile{name: names[i], readErr: err})
				out[i] = parsed{c: checked{g, ps}}
				continue
			}
			scratch = data[:0] // the next file reuses the buffer
			if p, ok := last[names[i]]; ok && bytes.Equal(p.data, data) {
				out[i] = p
				continue
			}
			data = bytes.Clone(data)
			g, ps := checkFile(grantFile{name: names[i], data: data})
			out[i] = parsed{data, checked{g, ps}}
		}
		return scratch
	}
	workers := min(runtime.GOMAXPROCS(0), len(names)/filesPerWorker)
	if workers <= 1 {
		return out, each(0, 1, scratch)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { each(w, workers, nil) })
	}
	wg.Wait()
	return out, scratch
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
