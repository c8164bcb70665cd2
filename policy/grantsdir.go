package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
	// secretCheck says whether a secret can be read now (SetSecretCheck);
	// nil, or a nil function, checks nothing.
	secretCheck atomic.Pointer[func(use SecretUse) error]

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
	// valid are the files without problems that name a secret, even when
	// other files make the set invalid: Check reports their secrets too.
	valid []validGrant
}

// validGrant is one file without problems, and its name.
type validGrant struct {
	file string
	g    grant
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

// SetSecretCheck sets what a decision asks before it allows or asks for a
// call under a grant that names a secret: check(use) returns nil when the
// secret can be read now and delivered as use says, or why not, and the
// call is then denied secret_unavailable. nil (the default, and what the
// offline tools use) checks nothing. Set it before the first decision;
// brokerd gives CheckSecretUse on its secrets directory.
func (g *GrantsDir) SetSecretCheck(check func(use SecretUse) error) {
	if check == nil {
		g.secretCheck.Store(nil)
		return
	}
	g.secretCheck.Store(&check)
}

// checker is the secret check, or nil.
func (g *GrantsDir) checker() func(SecretUse) error {
	if p := g.secretCheck.Load(); p != nil {
		return *p
	}
	return nil
}

// Load reads every *.toml file in the directory, as LoadGrants describes.
// The result is shared with concurrent callers: it must not be changed.
func (g *GrantsDir) Load() (*GrantSet, []wire.GrantProblem, error) {
	r := g.load()
	return r.set, r.problems, r.err
}

// Check is what `bxctl grants check` reports: the loading problems, and,
// for every grant file without one whose auto or ask grant names a secret
// the secret check refuses, one problem on the line of its secret key:
// "secret: " and the check's reason, on one line. A deny grant's secret is
// never needed and not checked. err is set only when the directory itself
// cannot be read.
func (g *GrantsDir) Check() ([]wire.GrantProblem, error) {
	r := g.load()
	if r.err != nil {
		return nil, r.err
	}
	problems := slices.Clone(r.problems)
	if check := g.checker(); check != nil {
		for _, v := range r.valid {
			if v.g.g.Secret == nil || v.g.g.Mode == wire.Deny {
				continue
			}
			if err := check(*secretUse(v.g.g)); err != nil {
				problems = append(problems, problem{v.g.secretLine, "secret: " + secretReason(err)}.forFile(v.file))
			}
		}
	}
	sortProblems(problems)
	return problems, nil
}

// IsSecretProblem reports whether p is one Check adds for a secret that
// cannot be read, not a loading problem: such a problem leaves the set
// valid, and its text ends with its own runbook pointer.
func IsSecretProblem(p wire.GrantProblem) bool {
	if !strings.HasPrefix(p.Problem, "secret: ") {
		return false
	}
	for _, see := range []string{RunbookSecretUnavailable, RunbookSecretFileUnsafe, RunbookSecretsDirUnsafe} {
		if strings.HasSuffix(p.Problem, "; "+see) {
			return true
		}
	}
	return false
}

// secretReason is err on one line: for a *SecretError, the quoted name,
// the problem and the runbook pointer.
func secretReason(err error) string {
	var se *SecretError
	if errors.As(err, &se) {
		return fmt.Sprintf("%q: %s; %s", se.Name, se.Problem, se.See)
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// load is Load's read, shared with the calls that wait for it.
func (g *GrantsDir) load() *dirRead {
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
		return r
	}
	// Wait for the read under way, if any; calls that arrive from now on
	// wait for the read after this one, which starts after they came.
	g.reading.Lock()
	g.mu.Lock()
	g.next = nil
	g.mu.Unlock()
	r.set, r.problems, r.valid, r.err = g.read()
	g.reading.Unlock()
	close(r.done)
	return r
}

// read reads the directory and every grant file in it; g.reading is held.
func (g *GrantsDir) read() (*GrantSet, []wire.GrantProblem, []validGrant, error) {
	fd, err := openDir(g.path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("policy: cannot read the grants directory: %w", err)
	}
	defer closeFD(fd)
	if g.buf == nil {
		g.buf = make([]byte, 8<<10)
	}
	all, err := listDir(fd, g.path, g.buf)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("policy: cannot read the grants directory: %w", err)
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
	var valid []validGrant
	set, problems := collect(len(files), func(i int) (string, grant, []problem) {
		ps := files[i].c.ps
		// Rule 9 is checked at every read, never remembered: where a path
		// leads changes with the file system, not with the grant's bytes.
		if more := g.protect.problems(files[i].data, files[i].c.g, seen); len(more) > 0 {
			ps = append(slices.Clip(ps), more...)
		}
		if len(ps) == 0 && files[i].c.g.g.Secret != nil {
			valid = append(valid, validGrant{names[i], files[i].c.g})
		}
		return names[i], files[i].c.g, ps
	})
	readDone()
	return set, problems, valid, nil
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

// Decide reads the grants and decides req for an interactive session, as
// the package's Decide does: DecideIn(Scope{}, ...).
func (g *GrantsDir) Decide(req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	return g.DecideIn(Scope{}, req, st, now)
}

// DecideIn reads the grants and decides req for a session in scope: only
// the grants scope sees can match (Scope). The Decision remembers scope,
// and Redecide decides again in it.
func (g *GrantsDir) DecideIn(scope Scope, req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	set, problems, err := g.Load()
	if err != nil {
		// The directory itself is the problem; "." names it relative to itself.
		problems = []wire.GrantProblem{{File: ".", Problem: err.Error()}}
	}
	return decideSet(set, problems, g.checker(), scope, req, st, now)
}
