package bxctl

import (
	"fmt"
	"strings"

	"boxmaker/policy"
	"boxmaker/roles/bxctl/internal/posixacl"
)

// planFix checks one target and works out every change it needs, from
// the top down, without making any. It returns the open walk (which the
// caller closes once the changes are written through it) and the changes,
// or why the target is refused; then nothing stays open.
func planFix(p fixParams, t fixTarget, overlay map[objKey]posixacl.ACL) (walked, []change, string) {
	if why := p.protected.Reaches(t.path); why != "" {
		return nil, nil, why
	}
	owner, why := ownerOf(p.owners, t.path)
	if owner == nil {
		return nil, nil, why
	}
	w, err := walk(t.path)
	if err != nil {
		return nil, nil, err.Error()
	}
	refuse := func(format string, args ...any) (walked, []change, string) {
		w.close()
		return nil, nil, fmt.Sprintf(format, args...)
	}
	access := func(n node) (posixacl.ACL, error) {
		if a, ok := overlay[objKey{n.st.Dev, n.st.Ino, posixacl.Access}]; ok {
			return a, nil
		}
		return accessACL(n)
	}
	var changes []change
	// add keeps a change and its line: the entries added or widened, or,
	// for a default ACL where there was none, the whole of it.
	add := func(n node, kind string, m posixacl.Merged, fresh bool) {
		what := "access ACL"
		if kind == posixacl.Default {
			what = "default ACL"
		}
		switch {
		case fresh:
			changes = append(changes, change{n, kind, m.ACL, fmt.Sprintf("%s: %s: set to %s (it had none)", n.path, what, m.ACL)})
		case len(m.Changes) > 0:
			changes = append(changes, change{n, kind, m.ACL, fmt.Sprintf("%s: %s: %s", n.path, what, m.Describe())})
		}
	}
	inHome := false
	for i, n := range w {
		a, err := access(n)
		if err != nil {
			return refuse("%s: %v", n.path, err)
		}
		inHome = inHome || n.path == owner.home
		if !inHome {
			// Above the home nothing is changed; only checked.
			for _, u := range p.walkers {
				if !a.Allows(u.uid, u.gids, n.st.Uid, n.st.Gid, posixacl.Execute) {
					return refuse("%s does not let %s (uid %d) search it, and --fix changes nothing outside an owner's home",
						n.path, u.name, u.uid)
				}
			}
			continue
		}
		if n.st.Uid != owner.uid {
			return refuse("%s is owned by uid %d, not by %s (uid %d), whose home it is in", n.path, n.st.Uid, owner.name, owner.uid)
		}
		if i < len(w)-1 {
			var wants []posixacl.Want
			for _, u := range p.walkers {
				if has := a.Has(u.uid, u.gids, n.st.Uid, n.st.Gid); has&posixacl.Execute == 0 {
					wants = append(wants, posixacl.Want{UID: u.uid, Perm: has | posixacl.Execute})
				}
			}
			m, err := a.AddUsers(wants)
			if err != nil {
				return refuse("%s: %v", n.path, err)
			}
			add(n, posixacl.Access, m, false)
			continue
		}
		// The grant path itself.
		if t.writable && !n.dir() {
			return refuse("%s is not a directory, and a writable grant's path is a folder", n.path)
		}
		if !n.dir() && n.st.Nlink != 1 {
			// brokerd refuses to mount such a file (mount-source-refused),
			// and an ACL on it would reach every other name it has.
			return refuse("%s has %d hard links", n.path, n.st.Nlink)
		}
		need := posixacl.Read
		switch {
		case t.writable:
			need = posixacl.RWX
		case n.dir():
			need = posixacl.Read | posixacl.Execute
		}
		c := p.container
		var wants []posixacl.Want
		if has := a.Has(c.uid, c.gids, n.st.Uid, n.st.Gid); has&need != need {
			wants = append(wants, posixacl.Want{UID: c.uid, Perm: has | need})
		}
		m, err := a.AddUsers(wants)
		if err != nil {
			return refuse("%s: %v", n.path, err)
		}
		add(n, posixacl.Access, m, false)
		if !t.writable {
			// A read-only grant's tool makes nothing; what the owner
			// adds later keeps the owner's umask, as before.
			continue
		}
		d, ok := overlay[objKey{n.st.Dev, n.st.Ino, posixacl.Default}]
		if !ok {
			if d, ok, err = readACL(n.fd, posixacl.Default); err != nil {
				return refuse("%s: %v", n.path, err)
			}
		}
		fresh := !ok
		if fresh {
			d = posixacl.DefaultFrom(a)
		}
		dwants := []posixacl.Want{{UID: c.uid, Perm: need}, {UID: owner.uid, Perm: posixacl.RWX}}
		dm, err := d.AddUsers(dwants)
		if err != nil {
			return refuse("%s: its default ACL: %v", n.path, err)
		}
		add(n, posixacl.Default, dm, fresh)
	}
	return w, changes, ""
}

// ownerOf is the owner in whose home path lies (the deepest home, should
// one hold another), or nil and why none does.
func ownerOf(owners []ownerHome, path string) (*ownerHome, string) {
	var best *ownerHome
	for i := range owners {
		o := &owners[i]
		if o.home == path {
			return nil, fmt.Sprintf("it is %s's home itself: grant a folder inside it", o.name)
		}
		if policy.PathInside(o.home, path) && (best == nil || len(o.home) > len(best.home)) {
			best = o
		}
	}
	if best != nil {
		return best, ""
	}
	if len(owners) == 0 {
		return nil, "the owner group has no member with a home, and --fix changes only folders inside an owner's home"
	}
	var homes []string
	for _, o := range owners {
		homes = append(homes, o.home)
	}
	return nil, "it lies outside every owner's home (" + strings.Join(homes, ", ") + "), and --fix changes only folders inside one"
}
