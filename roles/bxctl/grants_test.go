package bxctl

import (
	"bytes"
	"os"
	"path/filepath"
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
		"a.toml:4: secret: secrets are not supported until M4\n" +
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
