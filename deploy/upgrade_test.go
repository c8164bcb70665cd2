package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// upgradeSystem is fakeSystem with the new build's and bxctl's answers.
type upgradeSystem struct {
	*fakeSystem
	doctor   string // bxctl doctor's output; "FAIL" in it fails it
	newBytes string // what the staged copy must hold
	notPlan  string // what the copy's deploy plan --json prints instead of the plan
}

func (u *upgradeSystem) command(name string, args ...string) ([]byte, []byte, error) {
	// The staged copy's name is random; the record says <staged>, and
	// the copy must hold the new build's bytes.
	staged := func(s string) string {
		if !strings.HasPrefix(s, filepath.Join(u.p.Bin, ".boxmaker.upgrade.")) {
			return s
		}
		if got, err := os.ReadFile(s); err != nil || string(got) != u.newBytes {
			u.t.Errorf("the staged copy %s holds %q, %v", s, got, err)
		}
		return "<staged>"
	}
	name = staged(name)
	args = slices.Clone(args)
	for i := range args {
		args[i] = staged(args[i])
	}
	out, errs, err := u.fakeSystem.command(name, args...)
	if err != nil {
		return out, errs, err
	}
	switch {
	case name == "<staged>" && len(args) > 2 && args[1] == "plan":
		if u.notPlan != "" {
			return []byte(u.notPlan), nil, nil
		}
		return u.p.JSON(), nil, nil
	case len(args) > 1 && args[0] == "deploy" && args[1] == "apply":
		return []byte("nothing to change: the system is the plan\n"), nil, nil
	case filepath.Base(name) == "bxctl":
		if strings.Contains(u.doctor, "FAIL") {
			return []byte(u.doctor), nil, errExit1
		}
		return []byte(u.doctor), nil, nil
	case name == "systemctl" && args[0] == "restart" && u.listen:
		for _, sk := range u.p.Sockets {
			if u.p.unitName(strings.TrimPrefix(sk.Listener, u.p.Prefix)) == args[1] {
				u.openSocket(sk.Path)
			}
		}
	}
	return out, errs, nil
}

var errExit1 = &exitError{}

type exitError struct{}

func (*exitError) Error() string { return "exit status 1" }

// upgradePlan is startPlan with <Bin> in the temporary directory, holding
// the old build, and the new build beside it.
func upgradePlan(t *testing.T) (Plan, string) {
	t.Helper()
	p := startPlan(t)
	p.Bin = filepath.Join(filepath.Dir(p.Home), "bin")
	p = New(p.Params)
	if err := os.MkdirAll(p.Bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Bin, "boxmaker"), []byte("old build"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(filepath.Dir(p.Home), "new-boxmaker")
	if err := os.WriteFile(src, []byte("new build"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p, src
}

func runUpgrade(t *testing.T, u *upgradeSystem, src string, dry bool) (string, error) {
	t.Helper()
	var out strings.Builder
	err := Upgrade(u.p, UpgradeOptions{New: src, DryRun: dry, Out: &out, Command: u.command, Wait: 300 * time.Millisecond})
	return out.String(), err
}

// TestUpgradeRestartsInOrder: every step in order, one line each; the new
// build is checked, installed and applied before anything restarts, the
// image is rebuilt from it before brokerd restarts, only the running roles
// restart (gatewayd was stopped), and bxctl doctor ends it. State is not
// touched.
func TestUpgradeRestartsInOrder(t *testing.T) {
	p, src := upgradePlan(t)
	f := &fakeSystem{t: t, p: p, listen: true, active: map[string]string{p.unitName("gatewayd"): "inactive"}}
	u := &upgradeSystem{fakeSystem: f, doctor: "ok: unit boxmaker-tools.service: active\ndoctor: all 14 checks ok\n", newBytes: "new build"}
	core := filepath.Join(p.Home, "memory", "core.md")
	out, err := runUpgrade(t, u, src, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dst := filepath.Join(p.Bin, "boxmaker")
	want := strings.Join([]string{
		"ok: copy " + src + " into " + p.Bin + " and check that the copy is a boxmaker build for this deployment (its deploy plan --json)",
		"ok: build the tool image with the new build as boxmaker-brokerd: " + fakeImage + " (built)",
		"ok: check that brokerd will run that image (" + p.etc("brokerd.toml") + ")",
		"ok: install the new build as " + dst + " (one rename; running roles keep the old build until they restart)",
		"ok: make what the new build's plan adds (" + dst + " deploy apply): nothing to change: the system is the plan",
		"ok: reload systemd's units (systemctl daemon-reload)",
		"ok: restart boxmaker-inferproxy.service if it runs",
		"ok: restart boxmaker-brokerd.service if it runs (its pending approvals end as abandoned, as audit verify reports; the calls waiting on them fail)",
		"ok: restart boxmaker-loopd.service if it runs",
		"ok: restart boxmaker-gatewayd.service if it runs: left inactive",
		"ok: check that every restarted role is active and answers on its sockets: inferproxy, brokerd, loopd",
		"ok: check the deployment (" + p.Bin + "/bxctl doctor): doctor: all 14 checks ok",
	}, "\n") + "\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	where := "--prefix=boxmaker- --home=" + p.Home + " --etc=" + p.Etc + " --bin=" + p.Bin + " --unit-dir=/etc/systemd/system --tmpfiles-dir=/etc/tmpfiles.d"
	wantRan := []string{
		"<staged> deploy plan --json " + where,
		"runuser -u boxmaker-brokerd -- <staged> brokerd image build --config " + p.etc("brokerd.toml"),
		dst + " deploy apply " + where,
		"systemctl daemon-reload",
		"systemctl restart boxmaker-inferproxy.service",
		"systemctl restart boxmaker-brokerd.service",
		"systemctl restart boxmaker-loopd.service",
		p.Bin + "/bxctl doctor --prefix=boxmaker- --home=" + p.Home,
	}
	if strings.Join(f.ran, "\n") != strings.Join(wantRan, "\n") {
		t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(f.ran, "\n"), strings.Join(wantRan, "\n"))
	}
	if got, err := os.ReadFile(dst); err != nil || string(got) != "new build" {
		t.Errorf("%s holds %q, %v", dst, got, err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: %v %v", dst, fi.Mode(), err)
	}
	if got, err := os.ReadFile(core); err != nil || string(got) != "core\n" {
		t.Errorf("the core memory changed: %q, %v", got, err)
	}

	if staged, _ := filepath.Glob(filepath.Join(p.Bin, ".boxmaker.upgrade.*")); len(staged) != 0 {
		t.Errorf("left behind: %q", staged)
	}
	// Again: the same bytes are not installed twice.
	for _, ln := range f.lns {
		ln.Close()
	}
	f.ran, f.lns = nil, nil
	out, err = runUpgrade(t, u, src, false)
	if staged, _ := filepath.Glob(filepath.Join(p.Bin, ".boxmaker.upgrade.*")); len(staged) != 0 {
		t.Errorf("left behind: %q", staged)
	}
	if err != nil || !strings.Contains(out, " (one rename; running roles keep the old build until they restart): already installed\n") ||
		!strings.Contains(out, "brokerd.toml): image = \"auto\" finds it\n") {
		t.Errorf("the second upgrade: %v\n%s", err, out)
	}
}

// TestUpgradeRefusesBeforeChanging: a file that is not a boxmaker build (its
// deploy plan fails, or prints no plan, or another deployment's), a
// symlink and a file that is not executable are refused before anything
// is installed; an image id in brokerd.toml that
// is not the new build's stops it before any restart; a doctor that fails
// fails the upgrade, with its FAIL lines and the runbook entry.
func TestUpgradeRefusesBeforeChanging(t *testing.T) {
	p, src := upgradePlan(t)
	dst := filepath.Join(p.Bin, "boxmaker")
	link := src + ".link"
	if err := os.Symlink(src, link); err != nil {
		t.Fatal(err)
	}
	plain := src + ".plain"
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	where := " deploy plan --json --prefix=boxmaker- --home=" + p.Home + " --etc=" + p.Etc + " --bin=" + p.Bin + " --unit-dir=/etc/systemd/system --tmpfiles-dir=/etc/tmpfiles.d"
	for _, tc := range []struct{ src, want string }{
		{src, " deploy plan (a copy of " + src + "): exit status 1: exec format error"},
		{link, link + " is a symbolic link: name the build's file itself"},
		{plain, plain + " is not executable"},
	} {
		f := &fakeSystem{t: t, p: p, fail: map[string]string{"<staged>" + where: "exec format error"}}
		out, err := runUpgrade(t, &upgradeSystem{fakeSystem: f, newBytes: "new build"}, tc.src, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), "see docs/runbook.md#deploy-upgrade-failed") ||
			!strings.HasPrefix(out, "failed: copy "+tc.src) {
			t.Errorf("%s: %v\n%s", tc.src, err, out)
		}
		if got, _ := os.ReadFile(dst); string(got) != "old build" {
			t.Fatalf("%s: installed", tc.src)
		}
		if staged, _ := filepath.Glob(filepath.Join(p.Bin, ".boxmaker.upgrade.*")); len(staged) != 0 {
			t.Errorf("%s: left behind: %q", tc.src, staged)
		}
	}
	// A program that runs but prints no plan (true, say), and a build that
	// plans another deployment, are not installed.
	other := p
	other.Home = "/srv/elsewhere"
	for _, tc := range []struct{ printed, want string }{
		{"\n", src + " deploy plan --json printed no plan"},
		{string(New(other.Params).JSON()), src + " plans another deployment"},
	} {
		f := &fakeSystem{t: t, p: p}
		out, err := runUpgrade(t, &upgradeSystem{fakeSystem: f, newBytes: "new build", notPlan: tc.printed}, src, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(f.ran) != 1 {
			t.Errorf("%q: %v, ran %q\n%s", tc.want, err, f.ran, out)
		}
		if got, _ := os.ReadFile(dst); string(got) != "old build" {
			t.Fatalf("%q: installed", tc.want)
		}
	}
	// An image id the owner set, not the new build's: the new build is not
	// installed, and brokerd is not restarted onto the old toolkit.
	conf := p.etc("brokerd.toml")
	seed, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	old := "sha256:" + strings.Repeat("0", 64)
	if err := os.WriteFile(conf, []byte(strings.Replace(string(seed), `image = ""`, `image = "`+old+`"`, 1)), 0o640); err != nil {
		t.Fatal(err)
	}
	f := &fakeSystem{t: t, p: p}
	out, err := runUpgrade(t, &upgradeSystem{fakeSystem: f, newBytes: "new build"}, src, false)
	if err == nil || !strings.Contains(err.Error(), "brokerd.toml names the image "+old+", not the new build's "+fakeImage) ||
		slices.ContainsFunc(f.ran, func(c string) bool { return strings.Contains(c, "restart") }) {
		t.Errorf("an old image id: %v, ran %q\n%s", err, f.ran, out)
	}
	if got, _ := os.ReadFile(dst); string(got) != "old build" {
		t.Fatal("an old image id: the new build was installed")
	}
	if err := os.WriteFile(conf, seed, 0o640); err != nil {
		t.Fatal(err)
	}
	f = &fakeSystem{t: t, p: p, listen: true}
	u := &upgradeSystem{fakeSystem: f, newBytes: "new build", doctor: "ok: unit boxmaker-tools.service: active\nFAIL: loopd model: the model does not answer; see docs/runbook.md#model-server-unreachable\ndoctor: 1 of 16 checks failed\n"}
	out, err = runUpgrade(t, u, src, false)
	if err == nil || !strings.Contains(err.Error(), "bxctl doctor: exit status 1:\n    FAIL: loopd model: the model does not answer") ||
		!strings.HasSuffix(out, "failed: check the deployment ("+p.Bin+"/bxctl doctor)\n") {
		t.Errorf("a failing doctor: %v\n%s", err, out)
	}
}

// TestUpgradeDryRun prints every step and runs nothing.
func TestUpgradeDryRun(t *testing.T) {
	p, src := upgradePlan(t)
	f := &fakeSystem{t: t, p: p}
	out, err := runUpgrade(t, &upgradeSystem{fakeSystem: f}, src, true)
	if err != nil || len(f.ran) != 0 || strings.Count(out, "would ") != 12 || !strings.HasPrefix(out, "would copy "+src) {
		t.Fatalf("%v, ran %q\n%s", err, f.ran, out)
	}
	if got, _ := os.ReadFile(filepath.Join(p.Bin, "boxmaker")); string(got) != "old build" {
		t.Fatal("a dry run installed")
	}
}
