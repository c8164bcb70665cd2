package policy

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"boxmaker/wire"
)

// GrantsDir is a grants directory as brokerd decides from it: every file is
// read again for every decision (M3a §3: no cache, a change applies to the
// next call). Two things keep that cheap without keeping anything the
// files no longer say:
//
//   - Calls that arrive while a read is under way share the next read,
//     which starts after every one of them arrived, as audit records share
//     an fsync. No call is decided from bytes read before it came.
//   - A file whose bytes are exactly those of the previous read (compared
//     in full) is not decoded and checked again; its result is reused.
//
// Every read also applies loading rule 9: no grant path may reach a
// protected path (Protected), the grants directory itself always among them.
//
// A GrantsDir is safe for concurrent use.
type GrantsDir struct {
	path    string
	protect *Protected

	mu   sync.Mutex
	next *dirRead // the read that calls arriving now will share; nil if none waits

	reading sync.Mutex        // held by the read under way
	last    map[string]parsed // the previous read's files; guarded by reading
	buf     []byte            // directory entries; guarded by reading
	scratch []byte            // file contents; guarded by reading
}

// dirRead is one read of the directory, shared by the calls that wait for it.
type dirRead struct {
	done     chan struct{}
	set      *GrantSet
	problems []wire.GrantProblem
	err      error
}

// NewGrantsDir returns the grants directory at path, whose grants may reach
// none of protected's paths nor the directory itself; nil protects only the
// directory. Only the protected paths' symlinks are resolved now; no grant
// is read yet.
func NewGrantsDir(path string, protected *Protected) *GrantsDir {
	return &GrantsDir{path: path, protect: protected.with(ProtectedPath{Path: path, What: "the grants directory"})}
}

// Path is the directory's path.
func (g *GrantsDir) Path() string { return g.path }

// Load reads every *.toml file in the directory, as LoadGrants describes.
// The result is shared with concurrent callers: it must not be changed.
func (g *GrantsDir) Load() (*GrantSet, []wire.GrantProblem, error) {
	g.mu.Lock()
	r := g.next
	lead := r == nil
	if lead {
		r = &dirRead{done: make(chan struct{})}
		g.next = r
	}
	g.mu.Unlock()
	if !lead {
		<-r.done
		return r.set, r.problems, r.err
	}
	// Wait for the read under way, if any; calls that arrive from now on
	// wait for the read after this one, which starts after they came.
	g.reading.Lock()
	g.mu.Lock()
	g.next = nil
	g.mu.Unlock()
	r.set, r.problems, r.err = g.read()
	g.reading.Unlock()
	close(r.done)
	return r.set, r.problems, r.err
}

// read reads the directory and every grant file in it; g.reading is held.
func (g *GrantsDir) read() (*GrantSet, []wire.GrantProblem, error) {
	fd, err := openDir(g.path)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: cannot read the grants directory: %w", err)
	}
	defer closeFD(fd)
	if g.buf == nil {
		g.buf = make([]byte, 8<<10)
	}
	all, err := listDir(fd, g.path, g.buf)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: cannot read the grants directory: %w", err)
	}
	var names []string
	for _, name := range all {
		if strings.HasSuffix(name, grantExt) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var files []parsed
	files, g.scratch = checkAll(fd, g.path, names, g.last, g.scratch)
	g.remember(names, files)
	seen := map[string]lstatResult{}
	set, problems := collect(len(files), func(i int) (string, grant, []problem) {
		ps := files[i].c.ps
		// Rule 9 is checked at every read, never remembered: where a path
		// leads changes with the file system, not with the grant's bytes.
		if more := g.protect.problems(files[i].data, files[i].c.g, seen); len(more) > 0 {
			ps = append(slices.Clip(ps), more...)
		}
		return names[i], files[i].c.g, ps
	})
	readDone()
	return set, problems, nil
}

// readDone is called when a read has its result; tests hold reads there.
var readDone = func() {}

// remember keeps the files just read for the next read to compare with;
// a file that is gone, or could not be read, is forgotten.
func (g *GrantsDir) remember(names []string, files []parsed) {
	if g.last == nil {
		g.last = make(map[string]parsed, len(names))
	}
	kept := 0
	for i, f := range files {
		if f.data == nil {
			delete(g.last, names[i])
			continue
		}
		g.last[names[i]] = f
		kept++
	}
	if len(g.last) == kept {
		return
	}
	current := make(map[string]bool, len(names))
	for _, name := range names {
		current[name] = true
	}
	for name := range g.last {
		if !current[name] {
			delete(g.last, name)
		}
	}
}

// Decide reads the grants and decides req, as the package's Decide does.
func (g *GrantsDir) Decide(req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	set, problems, err := g.Load()
	if err != nil {
		// The directory itself is the problem; "." names it relative to itself.
		problems = []wire.GrantProblem{{File: ".", Problem: err.Error()}}
	}
	return decideSet(set, problems, req, st, now)
}
