package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestMounts: which grants mount what, writable or not, as the runner
// mounts them: deny and http_fetch grants mount nothing, a shell with a
// secret mounts read-only.
func TestMounts(t *testing.T) {
	dir := t.TempDir()
	head := "mode = \"auto\"\nmax_taint = \"secret\"\n"
	for name, body := range map[string]string{
		"a-read.toml":   "tool = \"read_file\"\n" + head + "[constraints]\npaths = [\"/home/k/notes\", \"/home/k/b\"]\n",
		"b-write.toml":  "tool = \"write_file\"\nmode = \"ask\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/home/k/out\"]\n",
		"c-shell.toml":  "tool = \"shell\"\n" + head + "[constraints]\npaths = [\"/home/k/work\"]\n",
		"d-secret.toml": "tool = \"shell\"\n" + head + "result_class = \"secret\"\nsecret = \"k\"\nsecret_deliver = \"file\"\n[constraints]\npaths = [\"/home/k/deploy\"]\n",
		"e-deny.toml":   "tool = \"write_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/home/k\"]\n",
		"f-fetch.toml":  "tool = \"http_fetch\"\n" + head + "[constraints]\nhosts = [\"example.com\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set, problems, err := LoadGrants(dir, nil)
	if err != nil || problems != nil {
		t.Fatalf("%v %v", problems, err)
	}
	want := []GrantMounts{
		{"a-read", ReadFile, []string{"/home/k/notes", "/home/k/b"}, false},
		{"b-write", WriteFile, []string{"/home/k/out"}, true},
		{"c-shell", Shell, []string{"/home/k/work"}, true},
		{"d-secret", Shell, []string{"/home/k/deploy"}, false},
	}
	if got := set.Mounts(); !reflect.DeepEqual(got, want) {
		t.Errorf("%+v\nwant %+v", got, want)
	}
}

// TestReaches is rule 9's check for one path, symlinks followed.
func TestReaches(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o700)
	os.Symlink(home, filepath.Join(dir, "link"))
	p, err := NewProtected([]ProtectedPath{{Path: home, What: "BOXMAKER_HOME"}})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "other"):       "",
		filepath.Join(home, "x"):          "lies inside BOXMAKER_HOME",
		dir:                               "contains BOXMAKER_HOME",
		filepath.Join(dir, "link", "x"):   "leads through symlinks to",
		filepath.Join(dir, "a") + "/../b": "has a .. component",
	} {
		got := p.Reaches(path)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}
