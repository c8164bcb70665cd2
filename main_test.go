package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// call runs the whole program in process.
func call(argv ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(argv, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// roleHelp is a line each role's help must show: its own command.
var roleHelp = map[string][]string{
	"loopd":      {"serve --config=PATH"},
	"brokerd":    {"serve --config=PATH"},
	"gatewayd":   {"serve --config=PATH"},
	"inferproxy": {"serve --config=PATH"},
	"bxctl":      {"approvals [flags]", "approve <id>", "refuse <id>", "grants check", "audit verify", "chat [flags]"},
}

func TestRoleHelpByArgv0AndByOwnerCommand(t *testing.T) {
	for _, r := range roles {
		want, ok := roleHelp[r.name]
		if !ok {
			t.Fatalf("no help expectation for role %s", r.name)
		}
		for _, argv := range [][]string{
			{"/usr/lib/boxmaker/" + r.name, "--help"},
			{"boxmaker", r.name, "--help"},
		} {
			code, out, errs := call(argv...)
			if code != 0 || errs != "" {
				t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", argv, code, errs)
			}
			name := strings.Join(argv[:len(argv)-1], " ")
			name = strings.TrimPrefix(name, "/usr/lib/boxmaker/")
			if !strings.HasPrefix(out, "Usage: "+name+" <command>") {
				t.Errorf("%q: help does not start with its usage line:\n%s", argv, out)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("%q: help lacks %q:\n%s", argv, w, out)
				}
			}
		}
	}
}

func TestSubcommandHelpShowsFlags(t *testing.T) {
	for argv, want := range map[string]string{
		"brokerd serve --help":             "--accept-break",
		"bxctl refuse --help":              "--reason=TEXT",
		"boxmaker grants check --help":     "--grants=DIR",
		"boxmaker audit verify --help":     "--home=PATH",
		"boxmaker chat --help":             "--json",
		"boxmaker bxctl approvals --help":  "--admin-socket=PATH",
		"boxmaker inferproxy serve --help": "--config=PATH",
	} {
		code, out, errs := call(strings.Fields(argv)...)
		if code != 0 || errs != "" || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, stderr %q; want 0 and help showing %q:\n%s", argv, code, errs, want, out)
		}
	}
}

func TestOwnerHelpHasBxctlCommandsRolesAndSetup(t *testing.T) {
	code, out, errs := call("boxmaker", "--help")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	want := append([]string{"Usage: boxmaker <command>", "boxmaker links DIR", "boxmaker version"}, roleHelp["bxctl"]...)
	for _, r := range roles {
		want = append(want, "boxmaker "+r.name+" ...")
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("help lacks %q:\n%s", w, out)
		}
	}
	// Without a command the same overview goes to stderr, as a usage error.
	code, out, errs = call("boxmaker")
	if code != 2 || out != "" || !strings.Contains(errs, "boxmaker links DIR") {
		t.Errorf("no command: exit %d, stdout %q, stderr %q; want 2 and the overview on stderr", code, out, errs)
	}
}

// The owner's CLI hands its commands to bxctl under the owner's name. The
// checks use bad arguments, whose answer does not change as commands gain
// their bodies.
func TestOwnerRunsBxctlCommands(t *testing.T) {
	for argv, prefix := range map[string]string{
		"boxmaker approve x":       "boxmaker: ",
		"boxmaker bxctl approve x": "boxmaker bxctl: ",
		"bxctl approve x":          "bxctl: ",
	} {
		code, out, errs := call(strings.Fields(argv)...)
		if code != 2 || out != "" || !strings.HasPrefix(errs, prefix) || !strings.Contains(errs, "<id>") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and bxctl's complaint about <id>, prefixed %q", argv, code, out, errs, prefix)
		}
	}
}

// Every role serves now (gatewayd was the last, issue 14): serve needs its
// --config, and a config file that is not there is an error that says so.
func TestServeNeedsItsConfig(t *testing.T) {
	for _, r := range roles[:4] {
		code, _, errs := call(r.name, "serve")
		if code != 2 || !strings.Contains(errs, "missing flags: --config=PATH") {
			t.Errorf("%s serve without --config: exit %d, stderr %q", r.name, code, errs)
		}
	}
	code, out, errs := call("gatewayd", "serve", "--config", "/nonexistent/gatewayd.toml")
	if code != 1 || out != "" || !strings.Contains(errs, "/nonexistent/gatewayd.toml") || !strings.Contains(errs, "see docs/runbook.md#gatewayd-config-invalid") {
		t.Errorf("gatewayd serve with a missing config: exit %d, stdout %q, stderr %q; want 1, the file and its runbook line", code, out, errs)
	}
}

func TestUnknownCommandFails(t *testing.T) {
	for _, argv := range [][]string{
		{"boxmaker", "frobnicate"},
		{"bxctl", "frobnicate"},
		{"brokerd", "frobnicate"},
		{"boxmaker", "loopd", "frobnicate"},
		{"boxmaker", "approve", "not-a-number"},
		{"boxmaker", "version", "extra"},
		{"boxmaker", "links"},
	} {
		code, out, errs := call(argv...)
		if code == 0 || out != "" || errs == "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want non-zero and a message on stderr", argv, code, out, errs)
		}
	}
	_, _, errs := call("boxmaker", "frobnicate")
	if !strings.Contains(errs, "frobnicate") {
		t.Errorf("the message does not name the unknown command: %q", errs)
	}
}

func TestVersion(t *testing.T) {
	code, out, errs := call("boxmaker", "version")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "boxmaker ") || !strings.HasSuffix(out, " "+runtime.Version()+"\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = call("boxmaker", "version", "--help")
	if code != 0 || !strings.HasPrefix(out, "Usage: boxmaker version") {
		t.Errorf("version --help: exit %d, stdout %q", code, out)
	}
}

func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestLinks(t *testing.T) {
	exe := testExecutable(t)
	dir := t.TempDir()
	for i := range 2 { // the second run finds every link in place
		code, out, errs := call("boxmaker", "links", dir)
		if code != 0 || errs != "" {
			t.Fatalf("run %d: exit %d, stderr %q", i+1, code, errs)
		}
		if i == 1 && out != "links in "+dir+": ok\n" {
			t.Errorf("second run printed %q", out)
		}
	}
	for _, r := range roles {
		target, err := os.Readlink(filepath.Join(dir, r.name))
		if err != nil || target != exe {
			t.Errorf("%s: link to %q (%v); want %q", r.name, target, err, exe)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(roles) {
		t.Errorf("%d entries in the directory; want %d", len(entries), len(roles))
	}
}

func TestLinksRefusesForeignFilesAndChangesNothing(t *testing.T) {
	exe := testExecutable(t)
	for _, plant := range []struct {
		what string
		make func(p string) error
	}{
		{"a file", func(p string) error { return os.WriteFile(p, []byte("mine"), 0o644) }},
		{"a link elsewhere", func(p string) error { return os.Symlink("/bin/true", p) }},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
	} {
		dir := t.TempDir()
		foreign := filepath.Join(dir, "brokerd")
		if err := plant.make(foreign); err != nil {
			t.Fatal(err)
		}
		code, _, errs := call("boxmaker", "links", dir)
		if code == 0 || !strings.Contains(errs, "refusing to replace "+foreign) {
			t.Errorf("%s: exit %d, stderr %q; want a refusal naming %s", plant.what, code, errs, foreign)
		}
		if _, err := os.Lstat(filepath.Join(dir, "loopd")); err == nil {
			t.Errorf("%s: loopd was linked although the run was refused", plant.what)
		}
		if target, err := os.Readlink(foreign); err == nil && target == exe {
			t.Errorf("%s: the foreign entry was replaced", plant.what)
		}
	}
}
