package bxctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles/bxctl/internal/posixacl"
)

// fixHost is fixTree with what the command line reads: a brokerd.toml, a
// grants directory and the system's user files, in a directory of their
// own (env.sysEtc).
type fixHost struct {
	*fixTree
	etc, config, grants string
}

func newFixHost(t *testing.T, podman string) *fixHost {
	t.Helper()
	h := &fixHost{fixTree: newFixTree(t)}
	h.etc, h.grants = filepath.Join(h.root, "etc"), filepath.Join(h.root, "grants")
	h.config = filepath.Join(h.root, "brokerd.toml")
	os.Mkdir(h.etc, 0o755)
	os.Mkdir(h.grants, 0o700)
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/bash\nkyle:x:1000:1000::" + h.home + ":/bin/bash\n" +
			"boxmaker-tools:x:998:998::/var/lib/boxmaker/tools:/usr/sbin/nologin\nboxmaker-brokerd:x:997:997::/nonexistent:/usr/sbin/nologin\n",
		"group":  "root:x:0:\nkyle:x:1000:\nboxmaker-tools:x:998:\nboxmaker-brokerd:x:997:\nboxmaker-owner:x:990:kyle\n",
		"subuid": "boxmaker-tools:165536:65536\n",
		"subgid": "boxmaker-tools:165536:65536\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(h.etc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "[paths]\nhome = \"" + filepath.Join(h.root, "boxhome") + "\"\ngrants = \"" + h.grants + "\"\n\n[podman]\n" + podman
	if err := os.WriteFile(h.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *fixHost) grant(t *testing.T, id, tool, path string) {
	t.Helper()
	body := "tool = \"" + tool + "\"\nmode = \"ask\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"" + path + "\"]\n"
	if err := os.WriteFile(filepath.Join(h.grants, id+".toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (h *fixHost) fix(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := runCLI(&cli{}, append([]string{"grants", "check", "--fix", "--config", h.config}, args...),
		&env{name: "bxctl", stdin: strings.NewReader(""), stdout: &out, stderr: &errs, sysEtc: h.etc})
	return code, strings.ReplaceAll(out.String(), h.root, "ROOT"), strings.ReplaceAll(errs.String(), h.root, "ROOT")
}

// TestGrantsCheckFix: the whole command, from brokerd.toml and the user
// files: the tools' uid is 65534 inside, subuid start + 65533 outside;
// the tools user and brokerd get search on the home; a second run
// changes nothing and says so.
func TestGrantsCheckFix(t *testing.T) {
	h := newFixHost(t, "socket = \"unix:///nonexistent/podman.sock\"\n")
	h.grant(t, "notes", "write_file", filepath.Join(h.home, "notes"))
	h.grant(t, "ref", "read_file", filepath.Join(h.home, "docs", "ref"))
	code, out, errs := h.fix(t, "--dry-run")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "dry run: ROOT/home/kyle: access ACL: added u:998:--x, added u:997:--x; mask --x\n") ||
		!strings.HasSuffix(out, "grants check --fix --dry-run: 4 changes to make; nothing was changed\n") {
		t.Errorf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if xattrHex(t, h.home, posixacl.Access) != "-" {
		t.Error("the dry run changed the home")
	}
	want := "ROOT/home/kyle: access ACL: added u:998:--x, added u:997:--x; mask --x\n" +
		"ROOT/home/kyle/docs/ref: access ACL: added u:231069:r-x; mask r-x\n" +
		"ROOT/home/kyle/notes: access ACL: added u:231069:rwx; mask rwx\n" +
		"ROOT/home/kyle/notes: default ACL: set to u::rwx,u:1000:rwx,u:231069:rwx,g::---,m::rwx,o::--- (it had none)\n" +
		"grants check --fix: 4 changes made\n"
	if code, out, errs := h.fix(t); code != 0 || out != want || errs != "" {
		t.Errorf("exit %d\n%s%s\nwant\n%s", code, out, errs, want)
	}
	if code, out, errs := h.fix(t); code != 0 || out != "grants check --fix: nothing to change: every granted path is already reachable by the tools\n" || errs != "" {
		t.Errorf("again: exit %d\n%s%s", code, out, errs)
	}
}

// TestGrantsCheckFixRefusals: a refused path makes the exit status 1 and
// the summary says so; a grant set with a problem changes nothing.
func TestGrantsCheckFixRefusals(t *testing.T) {
	h := newFixHost(t, "")
	h.grant(t, "out", "shell", filepath.Join(h.root, "elsewhere"))
	code, out, _ := h.fix(t)
	want := "ROOT/elsewhere (grant out): refused: it lies outside every owner's home (ROOT/home/kyle), and --fix changes only folders inside one; see docs/runbook.md#grant-fix-refused\n" +
		"grants check --fix: 0 changes made, 1 path refused\n"
	if code != 1 || out != want {
		t.Errorf("exit %d\n%s\nwant\n%s", code, out, want)
	}
	h.grant(t, "Bad", "shell", filepath.Join(h.home, "notes"))
	code, out, _ = h.fix(t)
	if code != 1 || !strings.HasSuffix(out, "grants check --fix: nothing changed: the grants are invalid; see docs/runbook.md#grants-invalid\n") ||
		xattrHex(t, filepath.Join(h.home, "notes"), posixacl.Access) != "-" {
		t.Errorf("invalid set: exit %d\n%s", code, out)
	}
}

// TestGrantsCheckFixUnsupported: settings under which the tools' uid is
// not one known uid are refused before any path is looked at.
func TestGrantsCheckFixUnsupported(t *testing.T) {
	for podman, why := range map[string]string{
		"userns = \"auto\"\n":     `userns = "auto" gives each tool container its own range of host uids`,
		"userns = \"keep-id\"\n":  `userns = "keep-id" maps the tools' uid in a way this command does not know`,
		"user = \"0:0\"\n":        `user "0:0" is not a numeric uid:gid other than root`,
		"socket = \"unix:///\"\n": "the Podman socket / is owned by uid 0, not by boxmaker-tools (uid 998)",
	} {
		h := newFixHost(t, podman)
		h.grant(t, "notes", "write_file", filepath.Join(h.home, "notes"))
		code, out, errs := h.fix(t)
		if code != 1 || out != "" || !strings.Contains(errs, why) || !strings.HasSuffix(errs, "; see docs/runbook.md#grant-fix-unsupported\n") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", podman, code, out, errs)
		}
		if xattrHex(t, h.home, posixacl.Access) != "-" {
			t.Errorf("%s: the home changed", podman)
		}
	}
}
