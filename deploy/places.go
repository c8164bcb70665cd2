package deploy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"boxmaker/runbook"
)

// surveyPlaces refuses a place apply works in that someone other than root
// could change under it (issue 29): every directory above what the plan
// lists (the home's and /etc/boxmaker's parents, the bin, unit and
// tmpfiles directories, and theirs), and the executable every role runs.
// Whoever can write a directory can rename what apply made in it and put
// their own directory or a link there, between apply's mkdir and its chown
// and chmod or at any time after; whoever can write the executable is
// every role. A root-owned sticky directory (/tmp, /var/tmp) is safe: there
// only an entry's owner may rename or remove it, so what apply made stays,
// and what someone else made first is refused by the path's own survey
// (its owner is not the plan's) or makes apply's exclusive create fail.
func (a *applier) surveyPlaces(conflict func(string, ...any)) {
	inPlan := map[string]bool{}
	for _, p := range a.plan.Paths {
		inPlan[p.Path] = true
	}
	dirs := map[string]bool{}
	add := func(path string) {
		for d := filepath.Dir(path); ; d = filepath.Dir(d) {
			if !inPlan[d] {
				dirs[d] = true
			}
			if d == "/" {
				return
			}
		}
	}
	for _, p := range a.plan.Paths {
		add(p.Path)
	}
	exe := filepath.Join(a.plan.Bin, "boxmaker")
	add(exe)
	// A link on the way (an installed executable that is a link, a /var
	// that is a link) leads through other directories: they count too.
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		add(real)
		a.checkPlace(real, false, conflict)
	}
	written := make([]string, 0, len(dirs))
	for d := range dirs {
		written = append(written, d)
	}
	for _, d := range written {
		if real, err := filepath.EvalSymlinks(d); err == nil && real != d {
			dirs[real] = true
			add(real)
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		a.checkPlace(d, true, conflict)
	}
	a.checkPlace(exe, false, conflict)
}

// checkPlace refuses path when it is not root's, or when its group or
// others may write it (a directory: unless it is root's and sticky). A
// missing path is left to the survey of what is inside it (apply's mkdir
// or write fails there).
func (a *applier) checkPlace(path string, dir bool, conflict func(string, ...any)) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		conflict("%s cannot be checked (%v): apply must know that no one but root can change it; %s", path, err, runbook.See("deploy-unsafe-path"))
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return // what it leads to is checked; the link's own directory is too
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		conflict("%s: its owner cannot be read; %s", path, runbook.See("deploy-unsafe-path"))
		return
	}
	what := "the directory"
	if !dir {
		what = "the executable every role runs,"
	}
	perm := uint32(fi.Mode().Perm())
	switch {
	case st.Uid != 0:
		conflict("%s %s is owned by %s, not root: its owner could swap what apply makes there; %s", what, path, userName(st.Uid),
			runbook.See("deploy-unsafe-path"))
	case perm&0o022 != 0 && !(dir && fi.Mode()&fs.ModeSticky != 0):
		conflict("%s %s is writable by its group or by everyone (mode %04o): they could swap what apply makes there; %s", what, path,
			perm, runbook.See("deploy-unsafe-path"))
	}
}

func userName(uid uint32) string {
	s := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(s); err == nil {
		return fmt.Sprintf("%s (uid %s)", u.Username, s)
	}
	return "uid " + s
}
