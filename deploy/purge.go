package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"boxmaker/runbook"
)

// systemDirs are directories --purge never deletes, nor a directory that
// holds one: Params.Check refuses only "/", and a mistyped --home or --etc
// must not take the system with it.
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
	"/nix", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr", "/var",
	"/etc/systemd", "/etc/systemd/system", "/etc/tmpfiles.d", "/usr/bin", "/usr/lib", "/usr/local", "/usr/local/bin",
	"/usr/local/lib", "/usr/local/sbin", "/usr/sbin", "/usr/share", "/var/backups", "/var/cache", "/var/lib", "/var/local",
	"/var/lock", "/var/log", "/var/mail", "/var/opt", "/var/run", "/var/spool", "/var/tmp"}

// within reports whether path is dir or inside it.
func within(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// purgeRefusal refuses a home or etc --purge must not delete: a top-level
// directory, a system directory or one holding it, one holding the plan's
// other places (the bin, unit and tmpfiles directories, each other), a
// person's home directory (/home/NAME) or one holding any account's home
// but the plan's own.
func purgeRefusal(plan Plan, sysEtc string) error {
	passwd, err := readPasswd(sysEtc)
	if err != nil {
		return fmt.Errorf("%v: --purge must know whose home directories are where", err)
	}
	for _, d := range []struct{ name, path string }{{"home", plan.Home}, {"etc", plan.Etc}} {
		if strings.Count(d.path, "/") < 2 {
			return fmt.Errorf("%s %s is a top-level directory: --purge deletes only a directory of its own, below one", d.name, d.path)
		}
		if filepath.Dir(d.path) == "/home" {
			return fmt.Errorf("%s %s is where a person's home directory goes", d.name, d.path)
		}
		for _, sys := range systemDirs {
			if within(sys, d.path) {
				return fmt.Errorf("%s %s is, or holds, the system directory %s", d.name, d.path, sys)
			}
		}
		for _, o := range []struct{ name, path string }{{"bin", plan.Bin}, {"unit-dir", plan.UnitDir}, {"tmpfiles-dir", plan.TmpfilesDir},
			{"home", plan.Home}, {"etc", plan.Etc}} {
			if o.name != d.name && within(o.path, d.path) {
				return fmt.Errorf("%s %s is, or holds, the %s %s", d.name, d.path, o.name, o.path)
			}
		}
		for _, pw := range passwd {
			if !slices.ContainsFunc(plan.Users, func(u User) bool { return u.Name == pw.name }) && pw.home != "/" && within(pw.home, d.path) {
				return fmt.Errorf("%s %s is, or holds, the home directory of the user %s (%s)", d.name, d.path, pw.name, pw.home)
			}
		}
	}
	return nil
}

// surveyState deletes, with --purge, what the plan keeps under the home
// and etc: each of the plan's own entries there (a directory with all it
// holds), then the directory itself once nothing else is in it. An entry
// the plan does not name is kept and said; the directories must be real
// ones, root's (as the plan's are), and hold no mount point, so that the
// deletion cannot leave the tree (os.RemoveAll never follows a link).
func (r *remover) surveyState(conflict func(string, ...any)) {
	mounts, err := readMounts(r.opts.Mountinfo)
	if err != nil {
		conflict("%v: --purge must know that nothing is mounted in what it deletes; %s", err, runbook.See("deploy-purge-refused"))
		return
	}
	r.surveyTree(r.plan.Home, "BOXMAKER_HOME itself, once empty", mounts, conflict)
	r.surveyTree(r.plan.Etc, "the configuration directory itself, once empty", mounts, conflict)
}

func (r *remover) surveyTree(root, why string, mounts []string, conflict func(string, ...any)) {
	fi, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		conflict("%s: %v; %s", root, err, runbook.See("deploy-purge-refused"))
		return
	}
	if !fi.IsDir() {
		conflict("%s is not a directory (%s): --purge deletes only the plan's own directories, never through a link; %s", root, fi.Mode().Type(),
			runbook.See("deploy-purge-refused"))
		return
	}
	// Root's and writable by no one else, as the plan makes it: then no one
	// can swap an entry for a link between the lstat below and the deletion.
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		owner := "its owner unknown"
		if ok {
			owner = userName(st.Uid)
		}
		conflict("%s is not root's alone (%s, mode %04o), as the plan's is: it may not be the plan's, or someone could swap what is in it; %s",
			root, owner, fi.Mode().Perm(), runbook.See("deploy-purge-refused"))
		return
	}
	inPlan := map[string]bool{}
	var acts []action
	for _, p := range r.plan.Paths {
		if filepath.Dir(p.Path) != root {
			continue
		}
		inPlan[filepath.Base(p.Path)] = true
		fi, err := os.Lstat(p.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		switch {
		case err != nil:
			conflict("%s: %v; %s", p.Path, err, runbook.See("deploy-purge-refused"))
		case (p.Kind == KindDir && fi.IsDir() || p.Kind == KindFile && fi.Mode().IsRegular()) && !madeByApply(r.a, fi, p):
			// A mistyped --home could name a directory of another
			// program's whose entries have the plan's names: apply's
			// modes and owners tell the plan's own apart.
			conflict("%s is %s, not the plan's %s %s:%s: --purge deletes only what deploy apply made; %s", p.Path, r.a.describe(fi),
				p.Mode, p.Owner, p.Group, runbook.See("deploy-purge-refused"))
		case p.Kind == KindDir && fi.IsDir():
			if m := mountedIn(mounts, p.Path); m != "" {
				conflict("%s is a mount point in %s: --purge would delete what that file system holds; unmount it first; %s", m, p.Path,
					runbook.See("deploy-purge-refused"))
				continue
			}
			r.purged = append(r.purged, p.Path+": "+p.Why)
			acts = append(acts, action{"delete " + p.Path + " and all it holds", func() error { return os.RemoveAll(p.Path) }})
		case p.Kind == KindFile && fi.Mode().IsRegular():
			r.purged = append(r.purged, p.Path+": "+p.Why)
			acts = append(acts, action{"delete " + p.Path, func() error { return os.Remove(p.Path) }})
		default:
			conflict("%s is not the plan's %s (it is %s): --purge deletes only the plan's own, never through a link; %s", p.Path, p.Kind,
				fi.Mode().Type(), runbook.See("deploy-purge-refused"))
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		conflict("%s: %v; %s", root, err, runbook.See("deploy-purge-refused"))
		return
	}
	// A kept entry owned by a plan user is said: --purge deletes that
	// account next, and the entry's owner becomes a bare number that the
	// next account made may get.
	uids := map[uint64]string{}
	for name, id := range r.a.planIDs("uid") {
		uids[id] = name
	}
	var foreign []string
	for _, e := range entries {
		if inPlan[e.Name()] {
			continue
		}
		name := e.Name()
		if fi, err := e.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && uids[uint64(st.Uid)] != "" {
				name += fmt.Sprintf(" (%s's: uid %d once that account is deleted)", uids[uint64(st.Uid)], st.Uid)
			}
		}
		foreign = append(foreign, name)
	}
	switch {
	case len(foreign) > 0:
		r.kept = append(r.kept, fmt.Sprintf("%s: it holds %s, which the plan did not make (delete them, and it, by hand)", root, strings.Join(foreign, ", ")))
	case slices.Contains(mounts, root):
		r.kept = append(r.kept, root+": it is a mount point (its file system is now empty of the plan's)")
	default:
		r.purged = append(r.purged, root+": "+why)
		acts = append(acts, action{"delete " + root, func() error { return os.Remove(root) }})
	}
	r.acts = append(r.acts, acts...)
}

// surveyAccounts deletes, with --purge and after the state, the plan's
// users (each with its primary group, and with it the tools user's
// subordinate ranges: userdel removes them) and the other groups. An
// account of a plan name that is not the plan's is refused, as apply
// refuses it: remove deletes only the accounts apply made, never a
// person's; the owner group's members keep their accounts.
func (r *remover) surveyAccounts(conflict func(string, ...any)) {
	passwd, err := readPasswd(r.opts.SysEtc)
	if err != nil {
		conflict("%v: remove must know whose primary group each group is", err)
		return
	}
	isPlanUser := func(name string) bool {
		return slices.ContainsFunc(r.plan.Users, func(u User) bool { return u.Name == name })
	}
	withUser := map[string]bool{}
	for _, u := range r.plan.Users {
		old, err := user.Lookup(u.Name)
		if err != nil {
			if left := r.subIDFiles(u.Name); u.SubIDs && len(left) > 0 {
				conflict("%s has no account but still has subordinate ranges in %s: remove those lines by hand (the next account of that name would get them); %s",
					u.Name, strings.Join(left, " and "), runbook.See("deploy-remove-failed"))
			}
			continue
		}
		comment := "boxmaker " + u.Role
		if old.Name != comment || old.HomeDir != u.Home {
			conflict("user %s exists (comment %q, home %s) and is not the plan's (comment %q, home %s): deploy remove deletes only the accounts apply made",
				u.Name, old.Name, old.HomeDir, comment, u.Home)
			continue
		}
		what, group := "delete user "+u.Name, false
		if g, err := user.LookupGroupId(old.Gid); err == nil && g.Name == u.Name {
			what, group = what+" and its group "+u.Name, true
			withUser[u.Name] = true
		}
		if u.SubIDs {
			// Files a tool container wrote in a granted folder are owned by
			// ids of this range; they cannot be found without searching
			// every disk, so they are said.
			if ranges, err := readSubIDs(filepath.Join(r.opts.SysEtc, "subuid")); err == nil {
				if rg, ok := ranges[u.Name]; ok {
					r.kept = append(r.kept, fmt.Sprintf("any file a tool container wrote in a granted folder: it stays owned by a uid of %s's subordinate range [%d, %d), which is freed (find DIR -uid +%d -uid -%d lists them)",
						u.Name, rg[0], rg[0]+rg[1], rg[0]-1, rg[0]+rg[1]))
				}
			}
		}
		name, subIDs := u.Name, u.SubIDs
		r.acts = append(r.acts, action{what, func() error { return r.deleteUser(name, group, subIDs) }})
	}
	for _, g := range r.plan.Groups {
		grp, err := user.LookupGroup(g.Name)
		if err != nil {
			continue
		}
		for _, pw := range passwd {
			if pw.gid == grp.Gid && !(isPlanUser(pw.name) && pw.name == g.Name) {
				conflict("group %s is the primary group of the user %s: groupdel cannot delete it, and deploy remove never deletes a person's account", g.Name, pw.name)
			}
		}
		members := r.a.groupMembers(grp.Gid)
		what := "delete group " + g.Name
		if g.Name == r.plan.Prefix+"owner" {
			if len(members) > 0 {
				what += " (its members " + strings.Join(members, ", ") + " keep their accounts)"
			}
		} else if i := slices.IndexFunc(members, func(m string) bool { return !slices.Contains(g.Members, m) }); i >= 0 {
			conflict("group %s has the member %s, whom the plan does not name: it may not be the plan's group", g.Name, members[i])
		}
		if !withUser[g.Name] {
			name := g.Name
			r.acts = append(r.acts, action{what, func() error { return r.run("groupdel", name) }})
		}
	}
}

// deleteUser runs userdel, then groupdel for the primary group if userdel
// left it (it removes it itself under login.defs' USERGROUPS_ENAB), and
// checks that no subordinate range is left for the name.
func (r *remover) deleteUser(name string, group, subIDs bool) error {
	if err := r.run("userdel", name); err != nil {
		return err
	}
	if _, err := user.LookupGroup(name); group && err == nil {
		if err := r.run("groupdel", name); err != nil {
			return err
		}
	}
	if left := r.subIDFiles(name); subIDs && len(left) > 0 {
		return fmt.Errorf("userdel left %s's subordinate ranges in %s: remove those lines by hand", name, strings.Join(left, " and "))
	}
	return nil
}

// subIDFiles are the subuid and subgid files that give name a range (or
// cannot be read).
func (r *remover) subIDFiles(name string) []string {
	var out []string
	for _, file := range []string{"subuid", "subgid"} {
		path := filepath.Join(r.opts.SysEtc, file)
		ranges, err := readSubIDRanges(path)
		if err != nil || slices.ContainsFunc(ranges, func(s subRange) bool { return s.name == name }) {
			out = append(out, path)
		}
	}
	return out
}

func (r *remover) run(name string, args ...string) error {
	if _, errs, err := r.opts.Command(name, args...); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, lastLines(errs, 5))
	}
	return nil
}

func (r *remover) userExists(name string) bool {
	_, err := user.Lookup(name)
	return err == nil
}

func (r *remover) groupExists(name string) bool {
	_, err := user.LookupGroup(name)
	return err == nil
}

type passwdEntry struct{ name, uid, gid, home string }

// readPasswd is the passwd file under sysEtc (os/user cannot list it).
func readPasswd(sysEtc string) ([]passwdEntry, error) {
	f, err := os.Open(filepath.Join(sysEtc, "passwd"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []passwdEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), ":"); len(fields) == 7 {
			out = append(out, passwdEntry{fields[0], fields[2], fields[3], filepath.Clean(fields[5])})
		}
	}
	return out, sc.Err()
}

// readMounts is every mount point in a mountinfo file (its fifth field,
// with the kernel's octal escapes undone).
func readMounts(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if fields := strings.Fields(line); len(fields) >= 5 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out, nil
}

func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountedIn is a mount point at dir or below it, or "".
func mountedIn(mounts []string, dir string) string {
	for _, m := range mounts {
		if within(m, dir) {
			return m
		}
	}
	return ""
}

// madeByApply says whether fi has p's mode and, where the plan's user and
// group exist, its owner and group. (Before the accounts are deleted they
// exist; a tree whose accounts are gone cannot be told by owner.)
func madeByApply(a *applier, fi fs.FileInfo, p Path) bool {
	mode, _, _ := strings.Cut(a.describe(fi), " ")
	if mode != p.Mode {
		return false
	}
	st := fi.Sys().(*syscall.Stat_t)
	if u, err := user.Lookup(p.Owner); err == nil && u.Uid != strconv.FormatUint(uint64(st.Uid), 10) {
		return false
	}
	if g, err := user.LookupGroup(p.Group); err == nil && g.Gid != strconv.FormatUint(uint64(st.Gid), 10) {
		return false
	}
	return true
}
