package deploy

import (
	"path/filepath"
	"strconv"
)

// Access is one cell of the access matrix: whether Subject (a role, or
// "owner": a member of the owner group and nothing else) can Op ("connect",
// "read" or "write") Path.
type Access struct {
	Subject string `json:"subject"`
	Op      string `json:"op"`
	Path    string `json:"path"`
	Allowed bool   `json:"allowed"`
}

// Subjects of the access matrix, in order.
var Subjects = append(append([]string{}, roleNames...), "owner")

// subject is who a subject is to the permission check: a user name and its
// groups.
type subject struct {
	user   string
	groups map[string]bool
}

func (p Plan) subject(s string) subject {
	if s == "owner" {
		// A human in the owner group; their own user and primary group own
		// nothing of boxmaker's.
		return subject{user: "(owner)", groups: map[string]bool{p.Prefix + "owner": true}}
	}
	sub := subject{user: p.UserFor(s), groups: map[string]bool{p.UserFor(s): true}}
	for _, u := range p.Users {
		if u.Name == sub.user {
			for _, g := range u.Groups {
				sub.groups[g] = true
			}
		}
	}
	return sub
}

// access computes the matrix from the plan's owners, groups and modes alone,
// the way the kernel checks a path (search on every parent directory, then
// the owner's, group's or others' bits): a naive oracle that the tests
// compare with the real system.
func access(p Plan) []Access {
	byPath := map[string]Path{}
	for _, x := range p.Paths {
		byPath[x.Path] = x
	}
	var out []Access
	for _, s := range Subjects {
		sub := p.subject(s)
		for _, sock := range p.Sockets {
			// A socket is made by its listener inside a setgid directory:
			// the listener's, the directory's group, mode 0660.
			dir := byPath[filepath.Dir(sock.Path)]
			sp := Path{Path: sock.Path, Owner: sock.Listener, Group: dir.Group, Mode: "0660"}
			out = append(out, Access{s, "connect", sock.Path, searchable(byPath, sub, sock.Path) && allows(sp, sub, 2)})
		}
		for _, x := range p.Paths {
			if !x.State {
				continue
			}
			reach := searchable(byPath, sub, x.Path)
			read, write := allows(x, sub, 4), allows(x, sub, 2)
			if x.Kind == KindDir {
				// Reading a directory is listing it and opening what is
				// inside; writing is making a file in it.
				read = read && allows(x, sub, 1)
				write = write && allows(x, sub, 1)
			}
			out = append(out, Access{s, "read", x.Path, reach && read}, Access{s, "write", x.Path, reach && write})
		}
	}
	return out
}

// searchable reports whether sub may search every directory above path
// that the plan lists (the rest, / and /var/lib, are searchable by all).
func searchable(byPath map[string]Path, sub subject, path string) bool {
	for d := filepath.Dir(path); d != "/"; d = filepath.Dir(d) {
		if x, ok := byPath[d]; ok && !allows(x, sub, 1) {
			return false
		}
	}
	return true
}

// allows applies the owner, group or other bits of x's mode to sub, for the
// permission bit want (4 read, 2 write, 1 search).
func allows(x Path, sub subject, want uint64) bool {
	m, err := strconv.ParseUint(x.Mode, 8, 32)
	if err != nil {
		return false
	}
	switch {
	case x.Owner == sub.user:
		return m>>6&want != 0
	case sub.groups[x.Group]:
		return m>>3&want != 0
	default:
		return m&want != 0
	}
}

// Allowed looks up one cell; a cell the plan does not hold is refused.
func (p Plan) Allowed(subject, op, path string) bool {
	for _, a := range p.Access {
		if a.Subject == subject && a.Op == op && a.Path == path {
			return a.Allowed
		}
	}
	return false
}
