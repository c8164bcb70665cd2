package deploy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/deploy"
)

// TestRemovePurge: --purge prints every path it deletes before it changes
// anything, then deletes the plan's own entries under the home and etc
// with all they hold, but nothing through a link inside them and nothing
// the plan did not make (a file of the owner's in the home keeps the home);
// run again, nothing is left to remove.
func TestRemovePurge(t *testing.T) {
	plan, self := installed(t)
	outside := filepath.Join(filepath.Dir(plan.Home), "outside")
	mkdir(t, outside, 0o755)
	writeFile(t, filepath.Join(outside, "precious"), "keep me\n", 0o644)
	mkdir(t, filepath.Join(plan.Home, "sessions"), 0o700)
	if err := os.Symlink(outside, filepath.Join(plan.Home, "sessions", "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(plan.Home, "mine.txt"), "the owner's\n", 0o600)
	planModes(t, plan)

	f := newFakeSystemd()
	f.running(plan)
	var printed string
	var out strings.Builder
	f.before = func(string) {
		if printed == "" {
			printed = out.String()
		}
	}
	mountinfo := filepath.Join(t.TempDir(), "mountinfo")
	writeFile(t, mountinfo, "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", 0o644)
	err := deploy.Remove(plan, deploy.RemoveOptions{Purge: true, Self: self, Out: &out, Command: f.command, Mountinfo: mountinfo})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	wantList := []string{
		"--purge deletes these, with all they hold:",
		"  " + plan.Home + "/sessions: loopd's session logs",
		"  " + plan.Home + "/audit: the audit log: brokerd its only writer; the owner group reads it for bxctl audit verify",
		"  " + plan.Home + "/tools: the rootless Podman service's home: its images and containers",
		"  " + plan.Etc + "/grants: one grant per file; written by the owner as root, read by brokerd only",
		"  " + plan.Etc + "/brokerd.toml: brokerd's configuration: written once by deploy apply, then the owner's",
		"  " + plan.Etc + ": the configuration directory itself, once empty",
	}
	if strings.Join(lines[:len(wantList)], "\n") != strings.Join(wantList, "\n") {
		t.Errorf("the list of what --purge deletes:\n%s\nwant:\n%s", strings.Join(lines[:min(len(lines), len(wantList))], "\n"), strings.Join(wantList, "\n"))
	}
	// All of it before the first change.
	if !strings.HasPrefix(printed, strings.Join(wantList, "\n")+"\nstop and disable bxr-loopd.service\n") {
		t.Errorf("printed before the first command:\n%s", printed)
	}
	rest := lines[len(wantList):]
	wantRest := append(removeLines(plan),
		"delete "+plan.Home+"/sessions and all it holds",
		"delete "+plan.Home+"/audit and all it holds",
		"delete "+plan.Home+"/tools and all it holds",
		"delete "+plan.Etc+"/grants and all it holds",
		"delete "+plan.Etc+"/brokerd.toml",
		"delete "+plan.Etc,
		"kept "+plan.Home+": it holds mine.txt, which the plan did not make (delete them, and it, by hand)",
		"23 changes made")
	if strings.Join(rest, "\n") != strings.Join(wantRest, "\n") {
		t.Errorf("output after the list:\n%s\nwant:\n%s", strings.Join(rest, "\n"), strings.Join(wantRest, "\n"))
	}
	if b, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(b) != "keep me\n" {
		t.Errorf("--purge followed a link out of the home: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(plan.Home)
	if len(entries) != 1 || entries[0].Name() != "mine.txt" {
		t.Errorf("the home holds %v, want only mine.txt", entries)
	}
	if _, err := os.Lstat(plan.Etc); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("etc is still there: %v", err)
	}

	f.ran, out = nil, strings.Builder{}
	err = deploy.Remove(plan, deploy.RemoveOptions{Purge: true, Self: self, Out: &out, Command: f.command, Mountinfo: mountinfo})
	want := "kept " + plan.Home + ": it holds mine.txt, which the plan did not make (delete them, and it, by hand)\n" +
		"nothing to remove: no unit, link, executable, state, user or group of the plan is left\n"
	if err != nil || out.String() != want || len(f.ran) != 0 {
		t.Errorf("the second run: %v, ran %v:\n%s", err, f.ran, out.String())
	}
}

// TestRemovePurgeRefuses: a home or etc --purge must not delete, a plan
// directory that is a link, a home that is a link or not root's, and a
// mount inside are refused, and nothing is changed.
func TestRemovePurgeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		params  func(p *deploy.Params)
		prepare func(t *testing.T, plan deploy.Plan) string // returns the mount table
		want    string
	}{
		{"a system directory", func(p *deploy.Params) { p.Home = "/var/lib" }, nil, "home /var/lib is, or holds, the system directory /var/lib"},
		{"a top-level directory", func(p *deploy.Params) { p.Etc = "/boxmaker" }, nil, "etc /boxmaker is a top-level directory"},
		{"a person's home", func(p *deploy.Params) { p.Home = "/home/alice" }, nil, "home /home/alice is where a person's home directory goes"},
		{"what Params.Check refuses", func(p *deploy.Params) { p.Etc = "/" }, nil, "want a clean absolute path other than /; nothing was changed; see docs/runbook.md#deploy-remove-conflict"},
		{"a home holding the units", func(p *deploy.Params) { p.UnitDir = filepath.Join(p.Home, "units") }, nil, "is, or holds, the unit-dir"},
		{"a link for a plan directory", nil, func(t *testing.T, plan deploy.Plan) string {
			os.RemoveAll(filepath.Join(plan.Etc, "grants"))
			if err := os.Symlink("/usr/share", filepath.Join(plan.Etc, "grants")); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "/e/grants is not the plan's dir (it is L"},
		{"a home that is a link", nil, func(t *testing.T, plan deploy.Plan) string {
			if err := os.Rename(plan.Home, plan.Home+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(plan.Home+".real", plan.Home); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "/h is not a directory (L"},
		{"a home that is not root's", nil, func(t *testing.T, plan deploy.Plan) string {
			if err := os.Chown(plan.Home, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "/h is not root's alone (nobody (uid 65534), mode 0711), as the plan's is"},
		{"a home others may write", nil, func(t *testing.T, plan deploy.Plan) string {
			if err := os.Chmod(plan.Home, 0o777); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "/h is not root's alone (root (uid 0), mode 0777), as the plan's is"},
		{"an entry apply did not make (another mode)", nil, func(t *testing.T, plan deploy.Plan) string {
			if err := os.Chmod(filepath.Join(plan.Home, "audit"), 0o755); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "/h/audit is 0755 root:root, not the plan's 2750 bxr-brokerd:bxr-owner: --purge deletes only what deploy apply made"},
		{"a mount in the tools' storage", nil, func(t *testing.T, plan deploy.Plan) string {
			return "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n40 22 0:50 / " + strings.ReplaceAll(plan.Home, " ", `\040`) +
				"/tools/.local/share/containers/storage/overlay/abc/merged rw - overlay overlay rw\n"
		}, "/tools/.local/share/containers/storage/overlay/abc/merged is a mount point in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, self := installed(t)
			if tc.params != nil {
				p := plan.Params
				tc.params(&p)
				plan = deploy.New(p)
			}
			mountinfo := ""
			if tc.prepare != nil {
				mountinfo = tc.prepare(t, plan)
			}
			opts := deploy.RemoveOptions{Purge: true, Self: self}
			if mountinfo != "" {
				opts.Mountinfo = filepath.Join(t.TempDir(), "mountinfo")
				writeFile(t, opts.Mountinfo, mountinfo, 0o644)
			}
			f := newFakeSystemd()
			f.running(plan)
			root := filepath.Dir(plan.Bin)
			before := snapshot(t, root)
			out, err := runRemove(t, plan, f, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was changed") ||
				!strings.Contains(err.Error(), "see docs/runbook.md#deploy-purge-refused") && !strings.Contains(tc.want, "#deploy-remove-conflict") {
				t.Fatalf("Remove = %v, want a refusal naming %q", err, tc.want)
			}
			if out != "" || len(f.ran) != 0 {
				t.Errorf("a refused remove printed %q and ran %v", out, f.ran)
			}
			if after := snapshot(t, root); after != before {
				t.Errorf("a refused remove changed files:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
