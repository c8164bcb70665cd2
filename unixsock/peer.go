package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os/user"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"boxmaker/runbook"
)

// Rule is one entry of a role's [peers] table: the only client a socket
// lets through, named by exactly one of User (that user) or Group (any
// user of that group). In TOML it is an inline table:
//
//	[peers]
//	broker = { user = "boxmaker-loopd" }
//	admin = { group = "boxmaker-owner" }
//
// The names are resolved to ids once, by Resolve, when the config is
// loaded. Root is not let through unless the rule names it.
type Rule struct {
	User  string `toml:"user,omitempty"`
	Group string `toml:"group,omitempty"`

	resolved bool
	id       uint32 // the uid of User or the gid of Group
}

// Resolve checks that the rule names exactly one of user or group, and
// looks the name up (os/user: /etc/passwd and /etc/group, or NSS). An
// unknown name is an error, as is a rule naming both or neither.
func (r *Rule) Resolve() error {
	switch {
	case r.User != "" && r.Group != "":
		return errors.New(`give one of user = "name" or group = "name", not both`)
	case r.User != "":
		u, err := user.Lookup(r.User)
		if err != nil {
			return lookupError("user", r.User, err)
		}
		return r.setID(u.Uid)
	case r.Group != "":
		g, err := user.LookupGroup(r.Group)
		if err != nil {
			return lookupError("group", r.Group, err)
		}
		return r.setID(g.Gid)
	}
	return errors.New(`give one of user = "name" or group = "name"`)
}

func lookupError(kind, name string, err error) error {
	var uu user.UnknownUserError
	var ug user.UnknownGroupError
	if errors.As(err, &uu) || errors.As(err, &ug) {
		return fmt.Errorf("there is no %s %q on this system", kind, name)
	}
	return fmt.Errorf("cannot look up %s %q: %v", kind, name, err)
}

func (r *Rule) setID(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return fmt.Errorf("the system gives %q an id that is not a number: %q", r.User+r.Group, s)
	}
	r.id, r.resolved = uint32(n), true
	return nil
}

// String says whom the rule lets through, with the id once resolved:
// `user boxmaker-loopd (uid 998)` or `group boxmaker-owner (gid 990)`.
func (r *Rule) String() string {
	kind, name, id := "user", r.User, "uid"
	if r.User == "" {
		kind, name, id = "group", r.Group, "gid"
	}
	if !r.resolved {
		return kind + " " + name
	}
	return fmt.Sprintf("%s %s (%s %d)", kind, name, id, r.id)
}

// Allows says whether a peer with uid and gid (as SO_PEERCRED gives them)
// passes the rule: a user rule matches the uid alone; a group rule matches
// the gid, or the uid's primary group or supplementary groups as the
// system lists them. The rule must be resolved.
func (r *Rule) Allows(uid, gid uint32) bool {
	if !r.resolved {
		return false
	}
	if r.User != "" {
		return uid == r.id
	}
	return gid == r.id || slices.Contains(groupsOf(uid), r.id)
}

// groupsOf is every group uid is in by the system's lists (its primary
// group and its supplementary ones); none when uid has no entry. It is
// read at each connection, so a change of membership holds from the next.
func groupsOf(uid uint32) []uint32 {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil
	}
	ids, err := u.GroupIds()
	if err != nil {
		ids = nil
	}
	var out []uint32
	for _, s := range append(ids, u.Gid) {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	return out
}

// admit reads c's peer credentials and checks them against the rule. When
// the peer is refused it returns the line to log: the socket, the peer's
// uid, gid and pid, the rule, and the runbook pointer.
func (r *Rule) admit(path string, c *net.UnixConn) (string, bool) {
	cred, err := peerCred(c)
	if err != nil {
		return fmt.Sprintf("%s: refused a connection whose peer cannot be read (SO_PEERCRED: %v); [peers] lets only %s connect; %s",
			path, err, r, runbook.See("peer-refused")), false
	}
	if r.Allows(cred.Uid, cred.Gid) {
		return "", true
	}
	return fmt.Sprintf("%s: refused a connection from uid %d (gid %d, pid %d): [peers] lets only %s connect; %s",
		path, cred.Uid, cred.Gid, cred.Pid, r, runbook.See("peer-refused")), false
}

// peerCred is the connecting process's credentials, as the kernel recorded
// them at connect.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, credErr
}
