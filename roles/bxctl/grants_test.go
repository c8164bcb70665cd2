package bxctl

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func runGrantsCheck(t *testing.T, dir string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main("bxctl", []string{"grants", "check", "--grants", dir}, strings.NewReader(""), &out, &errs)
	return code, out.String(), errs.String()
}

func TestGrantsCheckOK(t *testing.T) {
	dir := t.TempDir()
	grant := "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/home/kyle/notes\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "notes-read.toml"), []byte(grant), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runGrantsCheck(t, dir); code != 0 || out != "grants: ok\n" || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestGrantsCheckProblems(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.toml":     "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nsecret = \"k\"\n[constraints]\npaths = [\"/a\"]\n",
		"Bad.toml":   "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/a\"]\n",
		"ignore.txt": "not a grant",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := "Bad.toml: the file stem \"Bad\" is not a valid grant id (1 to 64 characters of [a-z0-9-])\n" +
		"a.toml:4: secret: read_file cannot be given a secret; only shell and http_fetch can\n" +
		"see docs/runbook.md#grants-invalid\n"
	if code, out, errs := runGrantsCheck(t, dir); code != 1 || out != want || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errs, want)
	}
}

func TestGrantsCheckMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	code, out, errs := runGrantsCheck(t, dir)
	if code != 1 || out != "" || !strings.HasPrefix(errs, "bxctl grants check: "+dir+": ") ||
		!strings.Contains(errs, "no such file or directory") || !strings.HasSuffix(errs, "see docs/runbook.md#grants-invalid\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestGrantsCheckProtected: offline, a grant whose path reaches
// BOXMAKER_HOME (the shell grant over the whole home), the
// configuration directory, or a path given with --protect is a problem,
// with its file, line and runbook entry; the home comes from --home, else
// from BOXMAKER_HOME.
func TestGrantsCheckProtected(t *testing.T) {
	root := t.TempDir()
	home, grants, extra := filepath.Join(root, "home"), filepath.Join(root, "grants"), filepath.Join(root, "srv", "brokerd.toml")
	for _, d := range []string{home, grants} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string) {
		g := "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"" + path + "\"]\n"
		if err := os.WriteFile(filepath.Join(grants, "g.toml"), []byte(g), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := Main("bxctl", append([]string{"grants", "check", "--grants", grants}, args...), strings.NewReader(""), &out, &errs)
		if errs.Len() > 0 {
			t.Errorf("stderr %q", errs.String())
		}
		return code, out.String()
	}
	for _, tc := range []struct {
		path string
		args []string
		env  string
		want string
	}{
		{root + "/srv", []string{"--home", home}, "", ""},
		{root, []string{"--home", home}, "", `contains the grants directory`},
		{home + "/broker/sessions", []string{"--home", home}, "", `lies inside BOXMAKER_HOME (` + home + `)`},
		{home + "/broker/sessions", nil, home, `lies inside BOXMAKER_HOME (` + home + `)`},
		{"/etc/boxmaker/secrets/api", []string{"--home", home}, "", `lies inside boxmaker's configuration directory`},
		{root + "/srv", []string{"--home", home, "--protect", extra}, "", `contains a path given with --protect (` + extra + `)`},
	} {
		t.Setenv("BOXMAKER_HOME", tc.env)
		write(tc.path)
		code, out := check(tc.args...)
		if tc.want == "" {
			if code != 0 || out != "grants: ok\n" {
				t.Errorf("%s: exit %d, %q", tc.path, code, out)
			}
			continue
		}
		prefix := `g.toml:5: constraints.paths: "` + tc.path + `" `
		if code != 1 || !strings.HasPrefix(out, prefix) || !strings.Contains(out, tc.want) ||
			!strings.HasSuffix(out, "see docs/runbook.md#grant-protected-path\nsee docs/runbook.md#grants-invalid\n") {
			t.Errorf("%s: exit %d, %q; want %q and %q", tc.path, code, out, prefix, tc.want)
		}
	}
}

// TestHomePartsMatchLayout: every directory docs/layout.md names under
// BOXMAKER_HOME is in homeParts (brokerd's config keeps the same list,
// with the same test).
func TestHomePartsMatchLayout(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("(?m)(?:^[├└]── ([a-z]+)/|^\\| `(run/[a-z-]+)/`)").FindAllStringSubmatch(string(doc), -1)
	if len(named) < 10 {
		t.Fatalf("found only %q in docs/layout.md", named)
	}
	for _, m := range named {
		if dir := m[1] + m[2]; !slices.Contains(homeParts, dir) {
			t.Errorf("docs/layout.md names %s under the home; homeParts does not", dir)
		}
	}
}
