package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// RunbookGrantProtected ends the problem of a grant path that reaches
// boxmaker's own files (loading rule 9). Written out like
// RunbookGrantsInvalid: policy cannot import the runbook package.
const RunbookGrantProtected = "see docs/runbook.md#grant-protected-path"

// ProtectedPath is a path no grant may reach, and what it is, for the
// owner's message ("BOXMAKER_HOME", "brokerd's config file").
type ProtectedPath struct {
	Path string
	What string
}

// Protected is the set of paths no grant path may equal, contain or lie
// inside (loading rule 9, issue 12): the grants directory, the secrets
// directory, BOXMAKER_HOME and each of its parts, the roles' config files,
// the Podman service's files. A grant that reached them could write a
// grant, lower its own session's taint, or read the audit log or loopd's
// sessions.
//
// Each path is compared in two forms, cleaned and with the symlinks of its
// existing prefix resolved, against both forms of each grant path, so that
// /x/link-to-home is caught as well as /var/lib/boxmaker/../boxmaker. The
// protected side is resolved once, here: the owner lays it out and no grant
// can reach it to change it. Grant paths are resolved again at every load.
//
// policy knows no role: brokerd builds the set from its config, bxctl from
// BOXMAKER_HOME and its flags. A Protected is immutable.
type Protected struct {
	entries []protectedEntry
}

type protectedEntry struct {
	what  string
	clean string
	real  string // clean with its existing prefix's symlinks resolved
	err   error  // why real could not be found; every grant is then refused
}

// NewProtected returns the set of paths. Each must be absolute; it is
// cleaned, so a trailing slash, "." or ".." changes nothing.
func NewProtected(paths []ProtectedPath) (*Protected, error) {
	p := &Protected{}
	for _, pp := range paths {
		if err := p.add(pp); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *Protected) add(pp ProtectedPath) error {
	if !filepath.IsAbs(pp.Path) || strings.IndexByte(pp.Path, 0) >= 0 {
		return fmt.Errorf("policy: protected path %q (%s) is not absolute", pp.Path, pp.What)
	}
	clean := filepath.Clean(pp.Path)
	real, err := resolve(clean)
	p.entries = append(p.entries, protectedEntry{what: pp.What, clean: clean, real: real, err: err})
	return nil
}

// with returns a copy of p with one more path, checked first; p is
// unchanged.
func (p *Protected) with(pp ProtectedPath) *Protected {
	q := &Protected{}
	if err := q.add(pp); err != nil {
		// Only a relative path fails: every grant is refused with why.
		q.entries = append(q.entries, protectedEntry{what: pp.What, clean: pp.Path, err: err})
	}
	if p != nil {
		q.entries = append(q.entries, p.entries...)
	}
	return q
}

// Paths lists the set as given, cleaned, for messages and tests.
func (p *Protected) Paths() []ProtectedPath {
	var out []ProtectedPath
	for _, e := range p.entries {
		out = append(out, ProtectedPath{Path: e.clean, What: e.what})
	}
	return out
}

// check says why the grant path g (valid by rule 7) reaches a protected
// path, or returns "". real is g resolved (resolve), or "" with rerr set
// when it could not be.
func (p *Protected) check(g, real string, rerr error) string {
	if p == nil {
		return ""
	}
	if rerr != nil {
		return fmt.Sprintf("%q cannot be checked against boxmaker's own files: %v", g, rerr)
	}
	for _, e := range p.entries {
		if e.err != nil {
			return fmt.Sprintf("%s (%s) cannot be resolved, so no grant path can be checked against it: %v", e.clean, e.what, e.err)
		}
		for _, gf := range []string{g, real} {
			for _, pf := range []string{e.clean, e.real} {
				if how := overlap(gf, pf); how != "" {
					shown := pf
					if gf != g {
						how = "leads through symlinks to " + gf + ", which " + how
					}
					return fmt.Sprintf("%q %s %s (%s): no grant may reach boxmaker's own files", g, how, e.what, shown)
				}
			}
		}
	}
	return ""
}

// overlap says how the clean absolute paths g and p meet by whole
// components: "is", "contains" (p lies below g) or "lies inside" (g lies
// below p); "" when they do not.
func overlap(g, p string) string {
	switch {
	case g == p:
		return "is"
	case inside(g, p):
		return "contains"
	case inside(p, g):
		return "lies inside"
	}
	return ""
}

// maxLinks bounds the symlinks followed in one path, as the kernel's 40.
const maxLinks = 40

// resolve returns the clean absolute path p with every symlink in it
// followed, as the kernel would to open it, but also where the path does
// not exist yet (realpath -m): a dangling link's target still counts,
// since what a link names may be created later (brokerd itself creates
// session files). A component that does not exist ends the resolution:
// the rest is kept as written. Any other error (a directory it may not
// search, a loop) is returned: a path brokerd cannot follow cannot be
// shown to stay clear of its files.
func resolve(p string) (string, error) {
	done := "/"
	todo := strings.Split(strings.TrimPrefix(p, "/"), "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
			return filepath.Join(append([]string{next}, todo...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return done, nil
}

// errNotDir is a path component that is not a directory: the path cannot
// exist, so the rest is kept as written.
var errNotDir = syscall.ENOTDIR

// problems is rule 9 for one file's grant: a problem for each of its valid
// paths that reaches a protected path. data is the file, for lines.
func (p *Protected) problems(data []byte, g grant) []problem {
	var ps []problem
	for _, path := range g.g.Constraints.Paths {
		if !ValidPath(path) { // rule 7 has said why
			continue
		}
		real, err := resolve(path)
		if msg := p.check(path, real, err); msg != "" {
			ps = append(ps, problem{itemLine(data, "paths", path), "constraints.paths: " + msg + "; " + RunbookGrantProtected})
		}
	}
	return ps
}
