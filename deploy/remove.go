package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"boxmaker/runbook"
)

// RemoveOptions are deploy remove's choices.
type RemoveOptions struct {
	// DryRun prints what remove would do and changes nothing.
	DryRun bool
	// Purge deletes the state too (the home, the configuration, grants and
	// secrets, the tools' Podman storage) and then the users and groups.
	// Without it they are kept, so that deploy apply installs again with
	// them (docs/decisions.md, "deploy remove keeps the state and its
	// users").
	Purge bool
	// Out receives one line per change (or planned change), what was kept,
	// and the summary.
	Out io.Writer
	// Self is the running executable, symlinks followed: <Bin>/boxmaker is
	// removed only when it is this file or holds the same bytes (what
	// apply installs). Empty: it is never removed.
	Self string
	// SysEtc is where passwd, group, subuid and subgid are ("/etc").
	SysEtc string
	// Command runs a program as root and returns its stdout and stderr:
	// systemctl, userdel, groupdel. nil runs it; tests stand in for it.
	Command func(name string, args ...string) (stdout, stderr []byte, err error)
	// Mountinfo is the mount table --purge reads ("/proc/self/mountinfo").
	Mountinfo string
}

// ErrRemoveConflict is what Remove's refusals wrap.
var ErrRemoveConflict = errors.New("deploy remove: the system differs from what deploy apply made")

// stopRoles is the order remove stops the units in: the reverse of
// --start's, so that no role is left running after one it calls is gone.
var stopRoles = []string{"gatewayd", "loopd", "brokerd", "inferproxy", "tools"}

type remover struct {
	plan Plan
	opts RemoveOptions
	// a lends apply's checks: the places above the plan, group members.
	a         *applier
	acts      []action
	conflicts []string
	// kept are what remove leaves on purpose, said after the changes;
	// purged are the paths --purge deletes, said before any change.
	kept   []string
	purged []string
}

// Remove undoes Apply (and --start): it stops and disables the plan's
// units, removes the unit files, the tmpfiles.d file, the role links and
// the installed executable, and reloads systemd. With Purge it then deletes
// the state and the configuration, and the users and groups. Like Apply it
// first surveys everything, and refuses, changing nothing, when anything it
// would delete is not what apply made (an edited unit file, a link that
// points elsewhere, another build, an account that is not the plan's). Run
// twice, the second run removes nothing.
func Remove(plan Plan, opts RemoveOptions) error {
	if err := plan.Check(); err != nil {
		return fmt.Errorf("deploy remove: %w; nothing was changed; %s", err, runbook.See("deploy-remove-conflict"))
	}
	if opts.SysEtc == "" {
		opts.SysEtc = "/etc"
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Command == nil {
		opts.Command = runCommand
	}
	if opts.Mountinfo == "" {
		opts.Mountinfo = "/proc/self/mountinfo"
	}
	if !opts.DryRun && os.Geteuid() != 0 {
		return fmt.Errorf("deploy remove: must run as root (it stops system units and deletes files and accounts of other users); --dry-run shows what it would do; %s",
			runbook.See("deploy-not-root"))
	}
	if opts.Purge {
		if err := purgeRefusal(plan, opts.SysEtc); err != nil {
			return fmt.Errorf("deploy remove --purge: %w; nothing was changed; %s", err, runbook.See("deploy-purge-refused"))
		}
	}
	r := &remover{plan: plan, opts: opts, a: &applier{plan: plan, opts: ApplyOptions{SysEtc: opts.SysEtc}}}
	r.survey()
	if len(r.conflicts) > 0 {
		return fmt.Errorf("%w: %d conflicts, and nothing was changed:\n  - %s\n%s", ErrRemoveConflict, len(r.conflicts),
			strings.Join(r.conflicts, "\n  - "), runbook.See("deploy-remove-conflict"))
	}
	verb, kept := "", "kept"
	if opts.DryRun {
		verb, kept = "would ", "would keep"
	}
	if len(r.purged) > 0 {
		head := "--purge deletes these, with all they hold:"
		if opts.DryRun {
			head = "--purge would delete these, with all they hold:"
		}
		fmt.Fprintln(opts.Out, head)
		for _, p := range r.purged {
			fmt.Fprintf(opts.Out, "  %s\n", p)
		}
	}
	for _, act := range r.acts {
		fmt.Fprintf(opts.Out, "%s%s\n", verb, act.what)
		if opts.DryRun {
			continue
		}
		if err := act.do(); err != nil {
			return fmt.Errorf("deploy remove: %s: %w (the changes above were made; run deploy remove again once it is fixed); %s",
				act.what, err, runbook.See("deploy-remove-failed"))
		}
	}
	for _, k := range r.kept {
		fmt.Fprintf(opts.Out, "%s %s\n", kept, k)
	}
	switch {
	case len(r.acts) == 0 && opts.Purge:
		fmt.Fprintf(opts.Out, "nothing to remove: no unit, link, executable, state, user or group of the plan is left\n")
	case len(r.acts) == 0:
		fmt.Fprintf(opts.Out, "nothing to remove: no unit, link or executable of the plan is left\n")
	case opts.DryRun:
		fmt.Fprintf(opts.Out, "%d changes planned; nothing was changed (--dry-run)\n", len(r.acts))
	default:
		fmt.Fprintf(opts.Out, "%d changes made\n", len(r.acts))
	}
	return nil
}

// survey lists every change in the order it is made, and every conflict.
func (r *remover) survey() {
	conflict := func(format string, args ...any) { r.conflicts = append(r.conflicts, fmt.Sprintf(format, args...)) }
	// Whoever can write a directory remove deletes in could swap what it
	// deletes there for something else: the same places apply refuses.
	r.a.surveyPlaces(conflict)
	r.surveyUnits(conflict)
	r.surveyInstalled(conflict)
	r.surveyLinks(conflict)
	r.surveyExecutable(conflict)
	if r.opts.Purge {
		r.surveyState(conflict)
		r.surveyAccounts(conflict)
		return
	}
	r.keptState()
}

// surveyUnits stops what runs and disables what is enabled, asking systemd
// for each unit of the plan.
func (r *remover) surveyUnits(conflict func(string, ...any)) {
	for _, role := range stopRoles {
		unit := r.plan.unitName(role)
		_, fileErr := os.Lstat(filepath.Join(r.plan.UnitDir, unit))
		active, stderr := r.query("is-active", unit)
		enabled, _ := r.query("is-enabled", unit)
		running := slices.Contains([]string{"active", "activating", "deactivating", "reloading", "refreshing"}, active)
		on := slices.Contains([]string{"enabled", "enabled-runtime", "linked", "linked-runtime"}, enabled)
		if active == "" && (fileErr == nil || on) {
			// No systemd to ask (not booted with it, or no bus): the role may
			// run, and remove never takes the files of a running role away.
			conflict("systemd cannot say whether %s runs (systemctl is-active %s printed nothing: %s): deploy remove stops a role before it removes its files",
				unit, unit, strings.TrimSpace(stderr))
			continue
		}
		var args []string
		what := ""
		switch {
		case running && on:
			what, args = "stop and disable "+unit, []string{"disable", "--now", unit}
		case running:
			what, args = "stop "+unit, []string{"stop", unit}
		case on:
			what, args = "disable "+unit, []string{"disable", unit}
		default:
			continue
		}
		r.acts = append(r.acts, action{what, func() error { return r.systemctl(args...) }})
	}
}

// query is the first line systemctl prints for one question about a unit
// (it exits non-zero for "inactive" and "disabled": the answer is in its
// output), and its stderr.
func (r *remover) query(question, unit string) (string, string) {
	out, errs, _ := r.opts.Command("systemctl", question, unit)
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, string(errs)
}

func (r *remover) systemctl(args ...string) error { return r.run("systemctl", args...) }

// surveyInstalled removes the unit files and the tmpfiles.d file when
// their bytes are the plan's, then reloads systemd. A drop-in directory
// beside a unit (systemctl edit) is the owner's: kept and said.
func (r *remover) surveyInstalled(conflict func(string, ...any)) {
	var files []Path
	for _, role := range stopRoles {
		files = append(files, r.planPath(filepath.Join(r.plan.UnitDir, r.plan.unitName(role))))
	}
	files = append(files, r.planPath(filepath.Join(r.plan.TmpfilesDir, strings.TrimSuffix(r.plan.Prefix, "-")+".conf")))
	units := 0
	for _, p := range files {
		if dropins := p.Path + ".d"; strings.HasPrefix(p.Path, r.plan.UnitDir+"/") && exists(dropins) {
			r.kept = append(r.kept, dropins+": drop-ins the plan did not make (delete them by hand)")
		}
		fi, err := os.Lstat(p.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			conflict("%s: %v", p.Path, err)
			continue
		case !fi.Mode().IsRegular():
			conflict("%s is not a file (%s): deploy remove deletes only what apply wrote", p.Path, fi.Mode().Type())
			continue
		}
		if b, err := os.ReadFile(p.Path); err != nil || !bytes.Equal(b, []byte(p.Text)) {
			conflict("%s differs from the plan's (edited by hand, or not boxmaker's): deploy remove deletes only what apply wrote; move it away, or put your changes in a drop-in, and run it again", p.Path)
			continue
		}
		if strings.HasPrefix(p.Path, r.plan.UnitDir+"/") {
			units++
		}
		r.acts = append(r.acts, action{"remove " + p.Path, func() error { return os.Remove(p.Path) }})
	}
	if units > 0 {
		r.acts = append(r.acts, action{"reload systemd's units (systemctl daemon-reload)", func() error { return r.systemctl("daemon-reload") }})
	}
}

// planPath is the plan's entry for path (every caller names one).
func (r *remover) planPath(path string) Path {
	for _, p := range r.plan.Paths {
		if p.Path == path {
			return p
		}
	}
	panic("deploy: no plan path " + path)
}

// surveyLinks removes each role link that points where the plan's does.
func (r *remover) surveyLinks(conflict func(string, ...any)) {
	for _, p := range r.plan.Paths {
		if p.Kind != KindLink {
			continue
		}
		fi, err := os.Lstat(p.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			conflict("%s is not a link (%v): deploy remove deletes only the links apply made", p.Path, describeErr(fi, err))
			continue
		}
		if target, err := os.Readlink(p.Path); err != nil || target != p.Target {
			conflict("%s is a link to %s, not the plan's %s: deploy remove deletes only the links apply made", p.Path, target, p.Target)
			continue
		}
		r.acts = append(r.acts, action{fmt.Sprintf("remove the link %s -> %s", p.Path, p.Target), func() error { return os.Remove(p.Path) }})
	}
}

// surveyExecutable removes <Bin>/boxmaker when it is what apply installs:
// this executable, or the same bytes. Another build is someone's upgrade
// (or not boxmaker at all), and remove cannot tell which.
func (r *remover) surveyExecutable(conflict func(string, ...any)) {
	dst := filepath.Join(r.plan.Bin, "boxmaker")
	fi, err := os.Lstat(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil || !fi.Mode().IsRegular():
		conflict("%s is not a file (%v): deploy remove deletes only the executable apply installed", dst, describeErr(fi, err))
		return
	}
	same := r.opts.Self == dst
	if !same && r.opts.Self != "" {
		mine, err1 := os.ReadFile(r.opts.Self)
		there, err2 := os.ReadFile(dst)
		same = err1 == nil && err2 == nil && bytes.Equal(mine, there)
	}
	if !same {
		conflict("%s is not this build of boxmaker (%s): run %s deploy remove, or remove it by hand", dst, orUnknown(r.opts.Self), dst)
		return
	}
	r.acts = append(r.acts, action{"remove " + dst, func() error { return os.Remove(dst) }})
}

// keptState says what remove without --purge leaves, and where.
func (r *remover) keptState() {
	if exists(r.plan.Home) {
		r.kept = append(r.kept, r.plan.Home+": the roles' state (audit log, sessions, notes, index, gatewayd's threads) and the tools' Podman storage ("+
			filepath.Join(r.plan.Home, "tools")+"): deploy apply uses it again, deploy remove --purge deletes it")
	}
	if exists(r.plan.Etc) {
		r.kept = append(r.kept, r.plan.Etc+": the configuration, grants, jobs and secrets: deploy apply keeps them, --purge deletes them")
	}
	var users, groups []string
	for _, u := range r.plan.Users {
		if r.userExists(u.Name) {
			users = append(users, u.Name)
		}
	}
	for _, g := range r.plan.Groups {
		if r.groupExists(g.Name) {
			groups = append(groups, g.Name)
		}
	}
	if len(users)+len(groups) > 0 {
		r.kept = append(r.kept, fmt.Sprintf("the users %s and the groups %s: the kept state is theirs, by uid and gid (--purge deletes them)",
			orNone(users), orNone(groups)))
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func describeErr(fi fs.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return "it is " + fi.Mode().Type().String()
}

func orUnknown(s string) string {
	if s == "" {
		return "this executable cannot be told"
	}
	return s
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}
