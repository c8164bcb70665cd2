package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"boxmaker/runbook"
)

// ApplyOptions are deploy apply's choices beyond the plan.
type ApplyOptions struct {
	// DryRun prints what apply would do and changes nothing.
	DryRun bool
	// Owners are existing users to add to the owner group.
	Owners []string
	// Out receives one line per change (or planned change) and the summary.
	Out io.Writer
	// Self is the running executable, symlinks followed: installed as
	// <Bin>/boxmaker when nothing is there. Empty: never installed.
	Self string
	// Etc is where /etc/passwd's neighbours live: subuid and subgid
	// ("/etc" unless a test says otherwise).
	SysEtc string
}

// ErrConflict is what Apply's refusals wrap.
var ErrConflict = errors.New("deploy apply: the system differs from the plan")

type applier struct {
	plan Plan
	opts ApplyOptions
}

// Apply makes the system match the plan: the users and groups, the
// directories with their exact modes, the role links, the configuration
// seeds, the unit files and the tmpfiles.d file. It first surveys
// everything; if anything that exists differs from the plan it refuses and
// changes nothing. Run twice, the second run changes nothing.
func Apply(plan Plan, opts ApplyOptions) error {
	if err := plan.Check(); err != nil {
		return fmt.Errorf("deploy apply: %w; %s", err, runbook.See("deploy-conflict"))
	}
	if opts.SysEtc == "" {
		opts.SysEtc = "/etc"
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if !opts.DryRun && os.Geteuid() != 0 {
		return fmt.Errorf("deploy apply: must run as root (it creates users, groups and files of other users); --dry-run shows what it would do; %s",
			runbook.See("deploy-not-root"))
	}
	a := &applier{plan: plan, opts: opts}
	acts, conflicts := a.survey()
	ownerActs, ownerConflicts := a.surveyOwners()
	acts, conflicts = append(acts, ownerActs...), append(conflicts, ownerConflicts...)
	if len(conflicts) > 0 {
		return fmt.Errorf("%w: %d conflicts, and nothing was changed:\n  - %s\n%s", ErrConflict, len(conflicts),
			strings.Join(conflicts, "\n  - "), runbook.See("deploy-conflict"))
	}
	verb := ""
	if opts.DryRun {
		verb = "would "
	}
	for _, act := range acts {
		fmt.Fprintf(opts.Out, "%s%s\n", verb, act.what)
		if opts.DryRun {
			continue
		}
		if err := act.do(); err != nil {
			return fmt.Errorf("deploy apply: %s: %w (the changes above were made; run deploy apply again once it is fixed); %s",
				act.what, err, runbook.See("deploy-failed"))
		}
	}
	// The users and groups made just now have ids the survey could not
	// know: none may lie in another's subordinate range.
	if c := a.subIDConflicts(); !opts.DryRun && len(c) > 0 {
		return fmt.Errorf("deploy apply: after the changes above, %d ids and subordinate ranges overlap (run deploy apply again once it is fixed):\n  - %s",
			len(c), strings.Join(c, "\n  - "))
	}
	switch {
	case len(acts) == 0:
		fmt.Fprintf(opts.Out, "nothing to change: the system is the plan\n")
	case opts.DryRun:
		fmt.Fprintf(opts.Out, "%d changes planned; nothing was changed (--dry-run)\n", len(acts))
	default:
		fmt.Fprintf(opts.Out, "%d changes made\n", len(acts))
	}
	return nil
}

// surveyOwners adds each named owner to the owner group. The owners must
// exist: deploy never creates a human's account.
func (a *applier) surveyOwners() (acts []action, conflicts []string) {
	group := a.plan.Prefix + "owner"
	grp, err := user.LookupGroup(group)
	var members []string
	if err == nil {
		members = a.groupMembers(grp.Gid)
	}
	for _, name := range a.opts.Owners {
		if _, err := user.Lookup(name); err != nil {
			conflicts = append(conflicts, fmt.Sprintf("owner %s: no such user (deploy never creates a person's account)", name))
			continue
		}
		if slices.Contains(members, name) {
			continue
		}
		acts = append(acts, action{"add " + name + " to the group " + group, func() error { return a.run("gpasswd", "--add", name, group) }})
	}
	return acts, conflicts
}

func (a *applier) run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// groupMembers reads a group's member list from the group file (os/user
// does not give it).
func (a *applier) groupMembers(gid string) []string {
	f, err := os.Open(filepath.Join(a.opts.SysEtc, "group"))
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) == 4 && fields[2] == gid {
			if fields[3] == "" {
				return []string{}
			}
			return strings.Split(fields[3], ",")
		}
	}
	return []string{}
}

// own gives what apply has just made (a directory, or the temporary file
// of write) the plan's owner, group and mode, on an open descriptor: the
// path is opened without following a link, and must still be what apply
// made (root's, of the plan's kind), so a directory or file swapped for
// another's, or for a link, between the mkdir and here is refused, never
// chowned or chmodded in its place (issue 29). chmod after chown: chown
// clears the setgid bit.
func (a *applier) own(p Path) error {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if p.Kind == KindDir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Open(p.Path, flags, 0)
	if err != nil {
		return fmt.Errorf("open %s to set its owner and mode: %w", p.Path, err)
	}
	f := os.NewFile(uintptr(fd), p.Path)
	defer f.Close()
	return a.ownFile(f, p)
}

// ownFile is own on a file apply holds open.
func (a *applier) ownFile(f *os.File, p Path) error {
	uid, gid, err := IDs(p.Owner, p.Group)
	if err != nil {
		return err
	}
	mode, err := strconv.ParseUint(p.Mode, 8, 32)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	want := map[string]uint32{KindDir: unix.S_IFDIR, KindFile: unix.S_IFREG}[p.Kind]
	if st.Uid != 0 || st.Mode&unix.S_IFMT != want {
		return fmt.Errorf("%s is not what apply made (owner uid %d, mode %o): someone replaced it; %s", p.Path, st.Uid, st.Mode,
			runbook.See("deploy-unsafe-path"))
	}
	if err := unix.Fchown(int(f.Fd()), uid, gid); err != nil {
		return err
	}
	return unix.Fchmod(int(f.Fd()), uint32(mode))
}

// write creates a file the plan writes, whole or not at all: a temporary
// file in the same directory, synced, given its owner and mode while it is
// open, then linked into place (a seed must not replace a file written
// since the survey).
func (a *applier) write(p Path) error {
	tmp := p.Path + ".deploy-tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(p.Text)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = a.ownFile(f, Path{Path: tmp, Kind: KindFile, Owner: p.Owner, Group: p.Group, Mode: p.Mode})
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, p.Path)
	}
	if rerr := os.Remove(tmp); err == nil {
		err = rerr
	}
	return err
}

// IDs are the uid of owner and the gid of group, by name.
func IDs(owner, group string) (int, int, error) {
	u, err := user.Lookup(owner)
	if err != nil {
		return 0, 0, err
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, 0, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(g.Gid)
	return uid, gid, nil
}
