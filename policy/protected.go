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
	real, err := resolveProtected(clean, nil)
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

// lstatResult is what one lstat found: the file type, or the error.
type lstatResult struct {
	mode uint32
	err  error
}

// resolveSeen returns the clean absolute path p with every symlink in it
// followed, as the kernel would to open it, but also where the path does
// not exist yet (realpath -m): a dangling link's target still counts,
// since what a link names may be created later (brokerd itself creates
// session files). A component that does not exist ends the resolution:
// the rest is kept as written. Any other error (a directory it may not
// search, a loop) is returned: a path brokerd cannot follow cannot be
// shown to stay clear of its files.
//
// It runs for every grant path at every decision, so it costs one lstat
// per existing component (plain system calls, as dirread.go explains) and
// a readlink per symlink; seen, when not nil, keeps what each lstat found
// for the rest of one read of the grants, whose paths share prefixes.
func resolveSeen(p string, seen map[string]lstatResult) (string, error) {
	return resolveIn(p, seen, false)
}

// resolveProtected is resolve for a protected path: a directory this
// process may not search ends the resolution like a missing component, and
// the rest is compared as written. Deployed, brokerd is not root, and
// Podman's rootful storage (/var/lib/containers/storage, root's 0700) is
// one of the places it protects. What it may not search it cannot follow a
// symlink through either, so a grant path that leads there fails its own
// resolution (and is refused), while one that names it lies inside the
// path as written.
func resolveProtected(p string, seen map[string]lstatResult) (string, error) {
	return resolveIn(p, seen, true)
}

func resolveIn(p string, seen map[string]lstatResult, deniedEnds bool) (string, error) {
	done := "" // the resolved prefix; "" is the root
	todo := p  // what is left, components separated by "/"
	links := 0
	for todo != "" {
		var c string
		c, todo, _ = strings.Cut(todo, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			done = done[:max(strings.LastIndexByte(done, '/'), 0)]
			continue
		}
		next := done + "/" + c
		r, ok := seen[next]
		if !ok {
			r = lstat(next)
			if seen != nil {
				seen[next] = r
			}
		}
		var target string
		if r.err == nil && r.mode == syscall.S_IFLNK {
			var err error
			if r, target, err = readlinkFresh(next, r, seen); err != nil {
				return "", err
			}
		}
		err := r.err
		if err == syscall.ENOENT || err == syscall.ENOTDIR || (deniedEnds && err == syscall.EACCES) {
			return filepath.Join(next, todo), nil
		}
		if err != nil {
			return "", &fs.PathError{Op: "lstat", Path: next, Err: err}
		}
		if r.mode != syscall.S_IFLNK {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		if strings.HasPrefix(target, "/") {
			done = ""
		}
		if todo != "" {
			target += "/" + todo
		}
		todo = target
	}
	if done == "" {
		return "/", nil
	}
	return done, nil
}

// maxChanges bounds how often one component may be found changed between
// its lstat and its readlink before the resolution gives up (fails closed).
const maxChanges = 8

// readlinkFresh reads the symlink that r (an lstat of path, perhaps kept
// from earlier in this read of the grants) found. A host may swap the path
// between the two calls: readlink then fails with EINVAL (no longer a link)
// or ENOENT (gone), which says only that the path changed, not that it
// cannot be followed. So path is looked at afresh, and what it is now is
// resolved instead, up to maxChanges times; past that, the error stands.
// It returns what path is now (r updated, and kept in seen) and, for a
// link, its target.
func readlinkFresh(path string, r lstatResult, seen map[string]lstatResult) (lstatResult, string, error) {
	for changes := 0; ; changes++ {
		target, err := os.Readlink(path)
		if err == nil {
			return r, target, nil
		}
		if changes == maxChanges || !(errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT)) {
			return r, "", err
		}
		r = lstat(path)
		if seen != nil {
			seen[path] = r
		}
		if r.err != nil || r.mode != syscall.S_IFLNK {
			return r, "", nil
		}
	}
}

// lstat is the type of the file at path, without following a last
// symlink.
func lstat(path string) lstatResult {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(path, &st)
		if err != syscall.EINTR {
			return lstatResult{st.Mode & syscall.S_IFMT, err}
		}
	}
}

// problems is rule 9 for one file's grant: a problem for each of its valid
// paths that reaches a protected path. data is the file, for lines.
func (p *Protected) problems(data []byte, g grant, seen map[string]lstatResult) []problem {
	var ps []problem
	for _, path := range g.g.Constraints.Paths {
		if !ValidPath(path) { // rule 7 has said why
			continue
		}
		real, err := resolveSeen(path, seen)
		if msg := p.check(path, real, err); msg != "" {
			ps = append(ps, problem{itemLine(data, "paths", path), "constraints.paths: " + msg + "; " + RunbookGrantProtected})
		}
	}
	return ps
}
