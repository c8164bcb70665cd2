package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// An action is one change apply makes, described for --dry-run and the
// report, and the function that makes it.
type action struct {
	what string
	do   func() error
}

// survey compares the system with the plan. It returns the changes that
// would bring the system to the plan and every conflict: something that
// exists and differs from the plan, which apply never changes, since it
// did not make it (or someone changed it since).
func (a *applier) survey() (acts []action, conflicts []string) {
	conflict := func(format string, args ...any) { conflicts = append(conflicts, fmt.Sprintf(format, args...)) }
	for _, g := range a.plan.Groups {
		acts = append(acts, a.surveyGroup(g, conflict)...)
	}
	for _, u := range a.plan.Users {
		acts = append(acts, a.surveyUser(u, conflict)...)
	}
	acts = append(acts, a.surveyExecutable(conflict)...)
	a.surveyPlaces(conflict)
	for _, p := range a.plan.Paths {
		acts = append(acts, a.surveyPath(p, conflict)...)
	}
	for _, c := range a.subIDConflicts() {
		conflict("%s", c)
	}
	return acts, conflicts
}

func (a *applier) surveyGroup(g Group, conflict func(string, ...any)) []action {
	want := slices.Clone(g.Members)
	if g.Name == a.plan.Prefix+"owner" {
		want = nil // owners come and go with --owner; see below
	}
	grp, err := user.LookupGroup(g.Name)
	if err != nil {
		acts := []action{{"create group " + g.Name, func() error { return a.run("groupadd", "--system", g.Name) }}}
		return acts
	}
	have := a.groupMembers(grp.Gid)
	if want == nil {
		return nil
	}
	// A member the plan does not name is someone else's doing. One the
	// plan names and the group lacks is an apply cut short: a user not
	// made yet joins when it is made (useradd --groups), one made joins now.
	var acts []action
	for _, m := range have {
		if !slices.Contains(want, m) {
			conflict("group %s exists with members %v; the plan's are %v", g.Name, have, want)
			return nil
		}
	}
	for _, m := range want {
		if _, err := user.Lookup(m); err == nil && !slices.Contains(have, m) {
			acts = append(acts, action{"add " + m + " to the group " + g.Name, func() error { return a.run("gpasswd", "--add", m, g.Name) }})
		}
	}
	return acts
}

func (a *applier) surveyUser(u User, conflict func(string, ...any)) []action {
	comment := "boxmaker " + u.Role
	old, err := user.Lookup(u.Name)
	if err != nil {
		args := []string{"--system", "--no-create-home", "--home-dir", u.Home, "--shell", "/usr/sbin/nologin",
			"--gid", u.Name, "--comment", comment}
		if len(u.Groups) > 0 {
			args = append(args, "--groups", strings.Join(u.Groups, ","))
		}
		acts := []action{{"create user " + u.Name, func() error { return a.run("useradd", append(args, u.Name)...) }}}
		if u.SubIDs {
			acts = append(acts, action{"give " + u.Name + " 65536 subordinate uids and gids", func() error { return a.addSubIDs(u.Name) }})
		}
		return acts
	}
	if old.Name != comment || old.HomeDir != u.Home {
		conflict("user %s exists (comment %q, home %s) and is not the plan's (comment %q, home %s)", u.Name, old.Name, old.HomeDir, comment, u.Home)
		return nil
	}
	if g, err := user.LookupGroupId(old.Gid); err != nil || g.Name != u.Name {
		conflict("user %s exists with primary group id %s, not the group %s", u.Name, old.Gid, u.Name)
	}
	var have []string
	ids, _ := old.GroupIds()
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil && id != old.Gid {
			have = append(have, g.Name)
		}
	}
	for _, g := range have {
		// Missing ones are added by the group's survey (an apply cut
		// short); one the plan does not give it is someone else's doing.
		if !slices.Contains(u.Groups, g) {
			conflict("user %s exists with groups %v; the plan's are %v", u.Name, have, u.Groups)
			break
		}
	}
	if u.SubIDs {
		if ok, err := a.hasSubIDs(u.Name); err != nil {
			conflict("%v", err)
		} else if !ok {
			return []action{{"give " + u.Name + " 65536 subordinate uids and gids", func() error { return a.addSubIDs(u.Name) }}}
		}
	}
	return nil
}

// surveyPath checks one path. Parents come first in the plan, so a
// directory's creation is listed before what goes in it.
func (a *applier) surveyPath(p Path, conflict func(string, ...any)) []action {
	fi, err := os.Lstat(p.Path)
	if errors.Is(err, fs.ErrNotExist) {
		switch {
		case p.Kind == KindDir:
			return []action{{fmt.Sprintf("create directory %s %s %s:%s", p.Path, p.Mode, p.Owner, p.Group), func() error {
				if err := os.Mkdir(p.Path, 0o700); err != nil {
					return err
				}
				return a.own(p)
			}}}
		case p.Kind == KindLink:
			return []action{{fmt.Sprintf("link %s -> %s", p.Path, p.Target), func() error { return os.Symlink(p.Target, p.Path) }}}
		case p.Content == ContentOwner:
			return nil // the owner writes it; deploy never does
		default:
			return []action{{fmt.Sprintf("write %s %s %s:%s", p.Path, p.Mode, p.Owner, p.Group), func() error { return a.write(p) }}}
		}
	}
	if err != nil {
		conflict("%s: %v", p.Path, err)
		return nil
	}
	if p.Kind == KindLink {
		if target, err := os.Readlink(p.Path); err != nil || target != p.Target {
			conflict("%s exists and is not a link to %s", p.Path, p.Target)
		}
		return nil
	}
	if want := map[string]bool{KindDir: fi.IsDir(), KindFile: fi.Mode().IsRegular()}; !want[p.Kind] {
		conflict("%s exists and is not a %s (%s)", p.Path, p.Kind, fi.Mode().Type())
		return nil
	}
	if got := a.describe(fi); got != p.Mode+" "+p.Owner+":"+p.Group {
		conflict("%s is %s; the plan says %s %s:%s", p.Path, got, p.Mode, p.Owner, p.Group)
	}
	// A POSIX ACL names users and groups the mode does not show: an
	// access ACL with a mask of --x shows as 2710 yet lets its named users
	// search, and a default ACL passes them on to each socket the
	// listener makes inside (issue 29). The plan's modes are the whole of
	// who may reach a path.
	for _, name := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
		if _, err := unix.Lgetxattr(p.Path, name, nil); err == nil || !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP) {
			conflict("%s has a POSIX ACL (%s) or it cannot be read (%v): it may let in users its mode does not show", p.Path, name, err)
		}
	}
	if p.Content == ContentExact {
		if b, err := os.ReadFile(p.Path); err != nil || !bytes.Equal(b, []byte(p.Text)) {
			conflict("%s exists and its content differs from the plan's", p.Path)
		}
	}
	return nil
}

// describe is a file's mode (four octal digits, setgid included), owner
// and group by name, in the plan's notation.
func (a *applier) describe(fi fs.FileInfo) string {
	st := fi.Sys().(*syscall.Stat_t)
	mode := uint32(fi.Mode().Perm())
	if fi.Mode()&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if fi.Mode()&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	owner, group := strconv.Itoa(int(st.Uid)), strconv.Itoa(int(st.Gid))
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return fmt.Sprintf("%04o %s:%s", mode, owner, group)
}
