package deploy

import (
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeImage is the id the stand-in image build prints.
const fakeImage = "sha256:abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabca"

// fakeSystem stands in for systemctl, journalctl and runuser: it records
// each command, answers is-active from active, and fails the commands
// fail names (by their joined text).
type fakeSystem struct {
	t      *testing.T
	p      Plan
	ran    []string
	active map[string]string // unit -> is-active's answer
	fail   map[string]string // command -> its stderr
	listen bool              // open a role's sockets when its unit starts
	reused bool              // the image build finds the image
	lns    []net.Listener
}

func (f *fakeSystem) command(name string, args ...string) ([]byte, []byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	if !strings.HasPrefix(line, "systemctl is-active") {
		f.ran = append(f.ran, line)
	}
	if errs, ok := f.fail[line]; ok {
		return nil, []byte(errs), errors.New("exit status 1")
	}
	switch {
	case name == "runuser":
		msg := "brokerd image build: imported " + fakeImage + " (layer sha256:def)"
		if f.reused {
			msg = "brokerd image build: found, already imported, " + fakeImage + " (layer sha256:def)"
		}
		return []byte(fakeImage + "\n"), []byte(msg), nil
	case name == "journalctl":
		return []byte("line 1\nline 2: the cause\n"), nil, nil
	case name == "systemctl" && args[0] == "is-active":
		st := f.active[args[1]]
		if st == "" {
			st = "active"
		}
		return []byte(st + "\n"), nil, nil
	case name == "systemctl" && args[0] == "enable" && f.listen:
		for _, sk := range f.p.Sockets {
			if f.p.unitName(strings.TrimPrefix(sk.Listener, f.p.Prefix)) == args[2] {
				f.openSocket(sk.Path)
			}
		}
	}
	return nil, nil, nil
}

func (f *fakeSystem) openSocket(path string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		f.t.Fatal(err)
	}
	f.lns = append(f.lns, ln)
	f.t.Cleanup(func() { ln.Close() })
}

// startPlan is a plan under a temporary directory, with brokerd.toml and
// gatewayd.toml as apply seeds them.
func startPlan(t *testing.T) Plan {
	t.Helper()
	dir := t.TempDir()
	p := Default()
	p.Home, p.Etc, p.Bin = filepath.Join(dir, "h"), filepath.Join(dir, "etc"), "/usr/local/bin"
	plan := New(p)
	if err := os.MkdirAll(p.Etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p.Home, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Home, "memory", "core.md"), []byte("core\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	b := &builder{p: p}
	for _, role := range []string{"brokerd", "gatewayd"} {
		if err := os.WriteFile(plan.etc(role+".toml"), []byte(b.config(role)), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return plan
}

func runStart(t *testing.T, f *fakeSystem, dry bool) (string, error) {
	t.Helper()
	var out strings.Builder
	err := Start(f.p, StartOptions{DryRun: dry, Out: &out, Command: f.command, Wait: 300 * time.Millisecond})
	return out.String(), err
}

// TestStartBringsUpTheRoles: every step in order, one line each; the seed's
// image line becomes "auto" (mode kept); gatewayd stays stopped while its
// configuration is the seed's, and starts once it names a server, owners
// and a token.
func TestStartBringsUpTheRoles(t *testing.T) {
	p := startPlan(t)
	f := &fakeSystem{t: t, p: p, listen: true}
	out, err := runStart(t, f, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	conf := p.etc("brokerd.toml")
	want := strings.Join([]string{
		"ok: reload systemd's units (systemctl daemon-reload)",
		"ok: start boxmaker-tools.service (rootless Podman for the tool containers)",
		"ok: build the tool image as boxmaker-brokerd: " + fakeImage + " (built)",
		`ok: set [podman] image = "auto" in ` + conf,
		"ok: make sure the core memory exists (loopd starts no session without it): " + p.Home + "/memory/core.md is there, the owner's",
		"ok: enable and start boxmaker-inferproxy.service",
		"ok: enable and start boxmaker-brokerd.service",
		"ok: enable and start boxmaker-loopd.service",
		"ok: leave boxmaker-gatewayd.service stopped: no Mattermost url in " + p.etc("gatewayd.toml"),
		"ok: check that every started role is active and answers on its sockets: inferproxy, brokerd, loopd",
	}, "\n") + "\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	wantRan := []string{
		"systemctl daemon-reload",
		"systemctl start boxmaker-tools.service",
		"runuser -u boxmaker-brokerd -- /usr/local/bin/brokerd image build --config " + conf,
		"systemctl enable --now boxmaker-inferproxy.service",
		"systemctl enable --now boxmaker-brokerd.service",
		"systemctl enable --now boxmaker-loopd.service",
	}
	if !slices.Equal(f.ran, wantRan) {
		t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(f.ran, "\n"), strings.Join(wantRan, "\n"))
	}
	data, _ := os.ReadFile(conf)
	if !strings.Contains(string(data), "\nimage = \"auto\"\n") || strings.Contains(string(data), `image = ""`) {
		t.Errorf("brokerd.toml after --start:\n%s", data)
	}
	if fi, _ := os.Stat(conf); fi.Mode().Perm() != 0o640 {
		t.Errorf("brokerd.toml is %v now", fi.Mode())
	}

	// Again, with Mattermost set: the image is found, the file left, and
	// gatewayd starts.
	gw := p.etc("gatewayd.toml")
	seed, _ := os.ReadFile(gw)
	set := strings.Replace(strings.Replace(string(seed), gatewayPlaceholder, "https://chat.example.org", 1), "owners = []", `owners = ["u1"]`, 1)
	if err := os.WriteFile(gw, []byte(set), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.etc("gatewayd.token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ln := range f.lns {
		ln.Close()
	}
	f.ran, f.reused = nil, true
	out, err = runStart(t, f, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, line := range []string{
		"ok: build the tool image as boxmaker-brokerd: " + fakeImage + " (found, built before from the same files)\n",
		`ok: set [podman] image = "auto" in ` + conf + ": it says so already\n",
		"ok: enable and start boxmaker-gatewayd.service\n",
		"answers on its sockets: inferproxy, brokerd, loopd, gatewayd\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in:\n%s", line, out)
		}
	}
}

// TestStartStopsAtTheFirstFailure: the failed step is printed as such, the
// error names the unit with its last journal lines and the runbook entry,
// and nothing after it runs; a role that is active but never opens its
// socket fails the health check, naming the socket.
func TestStartStopsAtTheFirstFailure(t *testing.T) {
	p := startPlan(t)
	f := &fakeSystem{t: t, p: p, listen: true, fail: map[string]string{
		"systemctl start boxmaker-tools.service": "Job for boxmaker-tools.service failed."}}
	out, err := runStart(t, f, false)
	if err == nil {
		t.Fatalf("no error:\n%s", out)
	}
	if !strings.HasSuffix(out, "failed: start boxmaker-tools.service (rootless Podman for the tool containers)\n") {
		t.Errorf("output:\n%s", out)
	}
	msg := err.Error()
	for _, want := range []string{"Job for boxmaker-tools.service failed.", "the last lines of journalctl -u boxmaker-tools.service:\n    line 1\n    line 2: the cause",
		"\nsee docs/runbook.md#deploy-start-failed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("no %q in %q", want, msg)
		}
	}
	if last := f.ran[len(f.ran)-1]; last != "journalctl -u boxmaker-tools.service -n 15 --no-pager -o cat" {
		t.Errorf("ran after the failure: %v", f.ran)
	}

	// loopd active, its sockets never opened.
	f = &fakeSystem{t: t, p: p}
	for _, sk := range p.Sockets {
		if sk.Listener != p.UserFor("loopd") {
			f.openSocket(sk.Path)
		}
	}
	out, err = runStart(t, f, false)
	if err == nil || !strings.Contains(err.Error(), "boxmaker-loopd.service: its socket "+p.Home+"/run/") ||
		!strings.Contains(err.Error(), "journalctl -u boxmaker-loopd.service") {
		t.Errorf("%v\n%s", err, out)
	}

	// A unit that failed is reported as failed.
	f.active = map[string]string{"boxmaker-inferproxy.service": "failed"}
	if _, err = runStart(t, f, false); err == nil || !strings.Contains(err.Error(), "boxmaker-inferproxy.service: the unit is failed") {
		t.Errorf("%v", err)
	}
}

// TestStartDryRun prints each step and runs nothing.
func TestStartDryRun(t *testing.T) {
	p := startPlan(t)
	f := &fakeSystem{t: t, p: p}
	out, err := runStart(t, f, true)
	if err != nil || len(f.ran) != 0 || strings.Count(out, "would ") != 10 || !strings.HasPrefix(out, "would reload systemd's units") {
		t.Errorf("%v, ran %v:\n%s", err, f.ran, out)
	}
}

// TestSetAutoImage: only the seed's empty image becomes "auto"; an id the
// owner set is kept, and a file where the line cannot be found for sure is
// refused.
func TestSetAutoImage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, in, out, said, err string }{
		{"seed", "[podman]\nimage = \"\"\n", "[podman]\nimage = \"auto\"\n", "", ""},
		{"auto", "[podman]\nimage = \"auto\"\n", "[podman]\nimage = \"auto\"\n", ": it says so already", ""},
		{"seed, a comment", "[podman]\nimage = \"\"  # c\n", "[podman]\nimage = \"auto\"  # c\n", "", ""},
		{"auto, a comment", "[podman]\nimage = \"auto\"   # or an id\n", "[podman]\nimage = \"auto\"   # or an id\n", ": it says so already", ""},
		{"an id", "[podman]\nimage = \"sha256:1\"\n", "[podman]\nimage = \"sha256:1\"\n", `: left as the owner set it (image = "sha256:1")`, ""},
		{"none", "[podman]\n# image = \"\"\n", "[podman]\n# image = \"\"\n", "", "not one"},
		{"two", "[podman]\nimage = \"\"\n[x]\nimage = \"\"\n", "[podman]\nimage = \"\"\n[x]\nimage = \"\"\n", "", "has 2 lines"},
	} {
		path := filepath.Join(dir, tc.name+".toml")
		if err := os.WriteFile(path, []byte(tc.in), 0o640); err != nil {
			t.Fatal(err)
		}
		said, err := setAutoImage(path)
		data, _ := os.ReadFile(path)
		if string(data) != tc.out || said != tc.said || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q, %v; file %q", tc.name, said, err, data)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v", tc.name, fi.Mode())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestFirstCoreMemory: a missing core memory is written empty with the
// plan's owner, group and mode; one that exists is never touched.
func TestFirstCoreMemory(t *testing.T) {
	p := startPlan(t)
	core := filepath.Join(p.Home, "memory", "core.md")
	if err := os.Remove(core); err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	group, err := user.LookupGroupId(me.Gid)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Paths {
		if p.Paths[i].Path == core { // an owner and group this test may give
			p.Paths[i].Owner, p.Paths[i].Group = me.Username, group.Name
		}
	}
	said, err := firstCoreMemory(p)
	fi, serr := os.Stat(core)
	if err != nil || serr != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o640 || !strings.Contains(said, "wrote an empty "+core+" ("+me.Username+":"+group.Name+" 0640)") {
		t.Fatalf("%q, %v; %v %v", said, err, fi, serr)
	}
	if err := os.WriteFile(core, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if said, err := firstCoreMemory(p); err != nil || !strings.HasSuffix(said, "is there, the owner's") {
		t.Errorf("%q, %v", said, err)
	}
	if b, _ := os.ReadFile(core); string(b) != "mine\n" {
		t.Errorf("the owner's core memory became %q", b)
	}
}
