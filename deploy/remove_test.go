package deploy_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"boxmaker/deploy"
)

// fakeSystemd stands in for systemctl (and, with pass, hands userdel and
// groupdel to the real ones): it answers is-active and is-enabled from its
// maps, as systemctl does (the answer on stdout, a non-zero exit unless
// active or enabled), and records every other command in order.
type fakeSystemd struct {
	ran     []string
	active  map[string]string // unit -> is-active's answer ("inactive" if absent; "" prints nothing)
	enabled map[string]string // unit -> is-enabled's answer (nothing if absent)
	before  func(line string) // called before each recorded command runs
	pass    bool
}

func newFakeSystemd() *fakeSystemd {
	return &fakeSystemd{active: map[string]string{}, enabled: map[string]string{}}
}

func (f *fakeSystemd) command(name string, args ...string) ([]byte, []byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	if name == "systemctl" && (args[0] == "is-active" || args[0] == "is-enabled") {
		m, def := f.active, "inactive"
		if args[0] == "is-enabled" {
			m, def = f.enabled, ""
		}
		st, ok := m[args[1]]
		if !ok {
			st = def
		}
		switch st {
		case "":
			return nil, []byte("Failed to connect to bus: Host is down\n"), errors.New("exit status 1")
		case "active", "enabled":
			return []byte(st + "\n"), nil, nil
		}
		return []byte(st + "\n"), nil, errors.New("exit status 3")
	}
	if f.before != nil {
		f.before(line)
	}
	f.ran = append(f.ran, line)
	switch {
	case name == "systemctl" && args[0] == "disable":
		unit := args[len(args)-1]
		f.enabled[unit] = "disabled"
		if args[1] == "--now" {
			f.active[unit] = "inactive"
		}
	case name == "systemctl" && args[0] == "stop":
		f.active[args[1]] = "inactive"
	case f.pass && name != "systemctl":
		out, err := exec.Command(name, args...).CombinedOutput()
		return nil, out, err
	}
	return nil, nil, nil
}

// running marks every unit of the plan as --start leaves it: the roles
// active and enabled, gatewayd (no Mattermost set) stopped and disabled,
// the tools unit active but not enabled (--start only starts it).
func (f *fakeSystemd) running(p deploy.Plan) {
	for _, role := range []string{"loopd", "brokerd", "inferproxy"} {
		f.active[p.Prefix+role+".service"], f.enabled[p.Prefix+role+".service"] = "active", "enabled"
	}
	f.active[p.Prefix+"gatewayd.service"], f.enabled[p.Prefix+"gatewayd.service"] = "inactive", "disabled"
	f.active[p.Prefix+"tools.service"], f.enabled[p.Prefix+"tools.service"] = "active", "disabled"
}

// installed makes what apply and --start leave, under a temporary root and
// with a prefix no account has: the unit and tmpfiles files, the role
// links, the executable, and some state and configuration. It returns the
// plan and a build of the same bytes as the installed executable.
func installed(t *testing.T) (deploy.Plan, string) {
	t.Helper()
	dir := shortTempDir(t)
	plan := deploy.New(deploy.Params{Prefix: "bxr-", Home: filepath.Join(dir, "h"), Etc: filepath.Join(dir, "e"), Bin: filepath.Join(dir, "bin"),
		UnitDir: filepath.Join(dir, "units"), TmpfilesDir: filepath.Join(dir, "tmpfiles")})
	for _, d := range []string{"bin", "units", "tmpfiles", "build"} {
		mkdir(t, filepath.Join(dir, d), 0o755)
	}
	for _, p := range plan.Paths {
		switch {
		case p.Kind == deploy.KindLink:
			if err := os.Symlink(p.Target, p.Path); err != nil {
				t.Fatal(err)
			}
		case p.Kind == deploy.KindFile && (filepath.Dir(p.Path) == plan.UnitDir || filepath.Dir(p.Path) == plan.TmpfilesDir):
			writeFile(t, p.Path, p.Text, 0o644)
		}
	}
	writeFile(t, filepath.Join(plan.Bin, "boxmaker"), "BUILD 1", 0o755)
	self := filepath.Join(dir, "build", "boxmaker")
	writeFile(t, self, "BUILD 1", 0o755)
	mkdir(t, plan.Home, 0o711)
	mkdir(t, filepath.Join(plan.Home, "audit"), 0o750)
	writeFile(t, filepath.Join(plan.Home, "audit", "log"), "the chain\n", 0o640)
	mkdir(t, filepath.Join(plan.Home, "tools", ".local", "share", "containers"), 0o700)
	writeFile(t, filepath.Join(plan.Home, "tools", ".local", "share", "containers", "layer"), "x", 0o600)
	mkdir(t, filepath.Join(plan.Etc, "grants"), 0o750)
	writeFile(t, filepath.Join(plan.Etc, "grants", "g.toml"), "grant\n", 0o640)
	writeFile(t, filepath.Join(plan.Etc, "brokerd.toml"), "mine\n", 0o640)
	planModes(t, plan)
	return plan, self
}

// planModes gives every path of the plan that exists under the home and
// etc the plan's mode, as apply makes it (the plan's accounts do not exist
// here, so owners stay root: --purge compares owners only where they do).
func planModes(t *testing.T, plan deploy.Plan) {
	t.Helper()
	for _, p := range plan.Paths {
		if p.Kind == deploy.KindLink || filepath.Dir(p.Path) != plan.Home && filepath.Dir(p.Path) != plan.Etc {
			continue
		}
		if _, err := os.Lstat(p.Path); err != nil {
			continue
		}
		m, err := strconv.ParseUint(p.Mode, 8, 32)
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(m & 0o777)
		if m&0o2000 != 0 {
			mode |= os.ModeSetgid
		}
		if m&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if err := os.Chmod(p.Path, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// shortTempDir is a temporary directory with a short name (t.TempDir's
// holds the test's name): the plan's socket paths must fit 107 bytes.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bxr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

func runRemove(t *testing.T, plan deploy.Plan, f *fakeSystemd, opts deploy.RemoveOptions) (string, error) {
	t.Helper()
	var out bytes.Buffer
	opts.Out, opts.Command = &out, f.command
	if opts.Mountinfo == "" {
		opts.Mountinfo = filepath.Join(t.TempDir(), "mountinfo")
		writeFile(t, opts.Mountinfo, "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n", 0o644)
	}
	err := deploy.Remove(plan, opts)
	return out.String(), err
}

// removeLines is what remove prints for installed's system, in order.
func removeLines(plan deploy.Plan) []string {
	u := func(role string) string { return plan.Prefix + role + ".service" }
	lines := []string{"stop and disable " + u("loopd"), "stop and disable " + u("brokerd"), "stop and disable " + u("inferproxy"), "stop " + u("tools")}
	for _, role := range []string{"gatewayd", "loopd", "brokerd", "inferproxy", "tools"} {
		lines = append(lines, "remove "+filepath.Join(plan.UnitDir, u(role)))
	}
	lines = append(lines, "remove "+filepath.Join(plan.TmpfilesDir, "bxr.conf"), "reload systemd's units (systemctl daemon-reload)")
	for _, l := range []string{"loopd", "brokerd", "gatewayd", "inferproxy", "bxctl"} {
		lines = append(lines, "remove the link "+filepath.Join(plan.Bin, l)+" -> boxmaker")
	}
	return append(lines, "remove "+filepath.Join(plan.Bin, "boxmaker"))
}

func keptLines(plan deploy.Plan, verb string) []string {
	return []string{
		verb + " " + plan.Home + ": the roles' state (audit log, sessions, notes, index, gatewayd's threads) and the tools' Podman storage (" +
			plan.Home + "/tools): deploy apply uses it again, deploy remove --purge deletes it",
		verb + " " + plan.Etc + ": the configuration, grants, jobs and secrets: deploy apply keeps them, --purge deletes them",
	}
}

// TestRemoveStopsAndRemovesAndKeepsTheState: one line per change in order
// (the units stopped gatewayd first and the tools last, only what runs
// stopped and what is enabled disabled), the same commands in that order,
// the state and configuration kept and said; run again, nothing is to
// remove and no command runs.
func TestRemoveStopsAndRemovesAndKeepsTheState(t *testing.T) {
	plan, self := installed(t)
	f := newFakeSystemd()
	f.running(plan)
	out, err := runRemove(t, plan, f, deploy.RemoveOptions{Self: self})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := strings.Join(append(append(removeLines(plan), keptLines(plan, "kept")...), "17 changes made"), "\n") + "\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	wantRan := []string{"systemctl disable --now bxr-loopd.service", "systemctl disable --now bxr-brokerd.service",
		"systemctl disable --now bxr-inferproxy.service", "systemctl stop bxr-tools.service", "systemctl daemon-reload"}
	if !slices.Equal(f.ran, wantRan) {
		t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(f.ran, "\n"), strings.Join(wantRan, "\n"))
	}
	var left []string
	for _, d := range []string{plan.Bin, plan.UnitDir, plan.TmpfilesDir} {
		l, _ := filepath.Glob(filepath.Join(d, "*"))
		left = append(left, l...)
	}
	if len(left) != 0 {
		t.Errorf("left in bin, units, tmpfiles: %v", left)
	}
	for _, kept := range []string{"audit/log", "tools/.local/share/containers/layer"} {
		if _, err := os.Stat(filepath.Join(plan.Home, kept)); err != nil {
			t.Errorf("the state was not kept: %v", err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(plan.Etc, "brokerd.toml")); string(b) != "mine\n" {
		t.Errorf("the configuration was not kept: %q", b)
	}

	f.ran = nil
	out, err = runRemove(t, plan, f, deploy.RemoveOptions{Self: self})
	want = strings.Join(append(keptLines(plan, "kept"), "nothing to remove: no unit, link or executable of the plan is left"), "\n") + "\n"
	if err != nil || out != want || len(f.ran) != 0 {
		t.Errorf("the second run: %v, ran %v:\n%s\nwant:\n%s", err, f.ran, out, want)
	}
}

// TestRemoveDryRun says what the run would do, line for line, runs no
// command and changes no file.
func TestRemoveDryRun(t *testing.T) {
	plan, self := installed(t)
	f := newFakeSystemd()
	f.running(plan)
	root := filepath.Dir(plan.Home)
	before := snapshot(t, root)
	out, err := runRemove(t, plan, f, deploy.RemoveOptions{Self: self, DryRun: true})
	var want []string
	for _, l := range removeLines(plan) {
		want = append(want, "would "+l)
	}
	want = append(append(want, keptLines(plan, "would keep")...), "17 changes planned; nothing was changed (--dry-run)")
	if err != nil || out != strings.Join(want, "\n")+"\n" || len(f.ran) != 0 {
		t.Errorf("%v, ran %v:\n%s\nwant:\n%s", err, f.ran, out, strings.Join(want, "\n"))
	}
	if after := snapshot(t, root); after != before {
		t.Errorf("the dry run changed files:\nbefore %s\nafter  %s", before, after)
	}
}

// TestRemoveRefusesWhatApplyDidNotMake: an edited unit file, a link to
// something else, another build, or a unit systemd cannot be asked about
// is refused, every conflict named, and nothing is stopped or deleted.
func TestRemoveRefusesWhatApplyDidNotMake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, plan deploy.Plan, f *fakeSystemd)
		want    string
	}{
		{"an edited unit file", func(t *testing.T, plan deploy.Plan, f *fakeSystemd) {
			writeFile(t, filepath.Join(plan.UnitDir, "bxr-loopd.service"), "[Service]\nUser=root\n", 0o644)
		}, "units/bxr-loopd.service differs from the plan's (edited by hand, or not boxmaker's)"},
		{"an edited tmpfiles file", func(t *testing.T, plan deploy.Plan, f *fakeSystemd) {
			writeFile(t, filepath.Join(plan.TmpfilesDir, "bxr.conf"), "d /x 0755 root root -\n", 0o644)
		}, "tmpfiles/bxr.conf differs from the plan's"},
		{"a link to something else", func(t *testing.T, plan deploy.Plan, f *fakeSystemd) {
			os.Remove(filepath.Join(plan.Bin, "bxctl"))
			if err := os.Symlink("/bin/sh", filepath.Join(plan.Bin, "bxctl")); err != nil {
				t.Fatal(err)
			}
		}, "bin/bxctl is a link to /bin/sh, not the plan's boxmaker"},
		{"another build", func(t *testing.T, plan deploy.Plan, f *fakeSystemd) {
			writeFile(t, filepath.Join(plan.Bin, "boxmaker"), "BUILD 2", 0o755)
		}, "bin/boxmaker is not this build of boxmaker"},
		{"no systemd to ask", func(t *testing.T, plan deploy.Plan, f *fakeSystemd) {
			f.active["bxr-brokerd.service"] = ""
		}, "systemd cannot say whether bxr-brokerd.service runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, self := installed(t)
			f := newFakeSystemd()
			f.running(plan)
			tc.prepare(t, plan, f)
			before := snapshot(t, filepath.Dir(plan.Home))
			out, err := runRemove(t, plan, f, deploy.RemoveOptions{Self: self})
			if !errors.Is(err, deploy.ErrRemoveConflict) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "1 conflicts, and nothing was changed") || !strings.HasSuffix(err.Error(), "\nsee docs/runbook.md#deploy-remove-conflict") {
				t.Fatalf("Remove = %v, want a conflict naming %q", err, tc.want)
			}
			if out != "" || len(f.ran) != 0 {
				t.Errorf("a refused remove printed %q and ran %v", out, f.ran)
			}
			if after := snapshot(t, filepath.Dir(plan.Home)); after != before {
				t.Errorf("a refused remove changed files:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestRemoveCommandLine: deploy remove takes plan and apply's flags; with
// nothing installed it has nothing to remove.
func TestRemoveCommandLine(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"remove", "--dry-run", "--prefix", "bxr-", "--home", dir + "/h", "--etc", dir + "/e", "--bin", dir + "/b",
		"--unit-dir", dir + "/u", "--tmpfiles-dir", dir + "/t"}
	if code := deploy.Main("boxmaker deploy", args, &stdout, &stderr); code != 0 ||
		stdout.String() != "nothing to remove: no unit, link or executable of the plan is left\n" {
		t.Errorf("status %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := deploy.Main("boxmaker deploy", []string{"remove", "--purge", "--dry-run", "--home", "/var/lib"}, &stdout, &stderr); code != 1 ||
		!strings.HasSuffix(stderr.String(), "home /var/lib is, or holds, the system directory /var/lib; nothing was changed; see docs/runbook.md#deploy-purge-refused\n") {
		t.Errorf("--purge --home /var/lib: status %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
