package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/policy"
)

// layout is a throwaway root holding a home, a grants directory and some
// symlinks, as rule 9's table needs them.
type layout struct {
	root, home, grants string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	root := t.TempDir()
	l := layout{root: root, home: filepath.Join(root, "home"), grants: filepath.Join(root, "etc", "grants")}
	for _, d := range []string{l.home + "/broker/sessions", l.grants, root + "/notes", root + "/realaudit", root + "/file-parent"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(root+"/file-parent/f", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"link-home":   l.home,                                  // absolute, to a protected path
		"rel-home":    "home",                                  // relative
		"up":          ".",                                     // to its own directory
		"chain":       "link-home",                             // a link to a link
		"dangling":    l.home + "/broker/sessions/victim.json", // a file brokerd creates later
		"to-grants":   "etc/../etc/grants",                     // with .. in the target
		"loop":        "loop",                                  // never ends
		"notes-link":  "notes",                                 // harmless
		"home/audit":  "../realaudit",                          // a part of home kept elsewhere
		"home/broken": "/nonexistent/../" + root + "/notes",    // .. after a missing directory
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// TestProtectedPaths is rule 9's table: a grant path that is, contains or
// lies inside a protected path, in any of the forms a path can take, makes
// its file invalid, with the line and the runbook entry; others are fine.
func TestProtectedPaths(t *testing.T) {
	l := newLayout(t)
	r := l.root
	prot, err := policy.NewProtected([]policy.ProtectedPath{
		{Path: l.home + "/", What: "BOXMAKER_HOME"},              // a trailing slash
		{Path: l.home + "/./audit", What: "the audit directory"}, // a symlink, written with "."
		{Path: r + "/etc/x/../brokerd.toml", What: "brokerd's config file"},
		{Path: r + "/link-to-secrets/s", What: "the secrets directory"}, // under a link made later
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       string // a part of the problem; "" when valid
	}{
		{"home itself", l.home, `is BOXMAKER_HOME (` + l.home + `)`},
		{"contains home", r, `contains the grants directory`}, // checked first
		{"the root contains everything", "/", `contains the grants directory`},
		{"inside home", l.home + "/broker/sessions", `lies inside BOXMAKER_HOME`},
		{"inside home, not yet there", l.home + "/new/dir", `lies inside BOXMAKER_HOME`},
		{"the grants directory", l.grants, `is the grants directory`},
		{"contains the grants directory", r + "/etc", `contains the grants directory`},
		{"a config file", r + "/etc/brokerd.toml", `is brokerd's config file`},
		{"a sibling by prefix only", r + "/home2", ""},
		{"a sibling of a file by prefix only", r + "/etc/brokerd.tomlx", ""},
		{"unrelated", r + "/notes", ""},
		{"a harmless link", r + "/notes-link", ""},
		{"a link to home", r + "/link-home", `leads through symlinks to ` + l.home + `, which is BOXMAKER_HOME`},
		{"a relative link to home", r + "/rel-home/broker", `lies inside BOXMAKER_HOME`},
		{"a link to its own directory", r + "/up/up/home", `is BOXMAKER_HOME`},
		{"a chain of links", r + "/chain/x", `lies inside BOXMAKER_HOME`},
		{"a dangling link into home", r + "/dangling", `lies inside BOXMAKER_HOME`},
		{"a link with .. to the grants", r + "/to-grants", `is the grants directory`},
		{"a part of home kept elsewhere", r + "/realaudit/2026.jsonl", `lies inside the audit directory`},
		{"a link loop", r + "/loop/x", `cannot be checked against boxmaker's own files`},
		{"below a file", r + "/file-parent/f/x", ""},
		{".. after a missing directory", l.home + "/broken", `lies inside BOXMAKER_HOME`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := simple("shell", "paths = [\n  \""+r+"/notes\",\n  \""+tc.path+"\",\n]")
			if err := os.WriteFile(filepath.Join(l.grants, "g.toml"), []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			set, ps, err := policy.LoadGrants(l.grants, prot)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if set == nil || len(ps) > 0 {
					t.Fatalf("problems %v", ps)
				}
				return
			}
			if set != nil || len(ps) != 1 {
				t.Fatalf("set %v, problems %v", set, ps)
			}
			p := ps[0]
			text := policy.FormatProblem(p)
			if p.File != "g.toml" || p.Line == nil || *p.Line != 8 || !strings.Contains(p.Problem, tc.want) ||
				!strings.HasPrefix(p.Problem, `constraints.paths: "`+tc.path+`" `) ||
				!strings.HasSuffix(p.Problem, "see docs/runbook.md#grant-protected-path") {
				t.Errorf("got %s\nwant line 8 and %q", text, tc.want)
			}
		})
	}
}

// TestProtectedLinkMadeLater: where a grant path leads is looked at in
// every load, not remembered with the file's bytes: a directory replaced
// by a link to home turns the set invalid at the next decision, and back.
func TestProtectedLinkMadeLater(t *testing.T) {
	l := newLayout(t)
	prot, err := policy.NewProtected([]policy.ProtectedPath{{Path: l.home, What: "BOXMAKER_HOME"}})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(l.root, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(l.grants, "other.toml")
	os.WriteFile(other, []byte(simple("read_file", `paths = ["`+l.root+`/notes"]`)), 0o600)
	os.WriteFile(filepath.Join(l.grants, "work.toml"), []byte(simple("shell", `paths = ["`+work+`"]`)), 0o600)
	g := policy.NewGrantsDir(l.grants, prot)
	// A call the other, valid grant allows.
	req := request("read_file", `{"path":"`+l.root+`/notes/a.md"}`)
	for i, step := range []struct {
		do   func() error
		want string
	}{
		{func() error { return nil }, "allowed"},
		{func() error { return firstErr(os.Remove(work), os.Symlink(l.home, work)) }, "grants_invalid"},
		{func() error { return firstErr(os.Remove(work), os.Mkdir(work, 0o700)) }, "allowed"},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		if got := outcomeName(g.Decide(req, private, now)); got != step.want {
			t.Errorf("step %d: got %s, want %s", i, got, step.want)
		}
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestProtectedSideResolved: a protected path reached through a symlink
// (home is a link to the disk that holds it) is caught by its target too.
func TestProtectedSideResolved(t *testing.T) {
	l := newLayout(t)
	prot, err := policy.NewProtected([]policy.ProtectedPath{{Path: l.root + "/link-home", What: "BOXMAKER_HOME"}})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(l.grants, "g.toml"), []byte(simple("read_file", `paths = ["`+l.home+`/memory"]`)), 0o600)
	_, ps, _ := policy.LoadGrants(l.grants, prot)
	if len(ps) != 1 || !strings.Contains(ps[0].Problem, "lies inside BOXMAKER_HOME ("+l.home+")") {
		t.Errorf("problems %v", ps)
	}
}

// TestProtectedMustBeAbsolute: a relative protected path is the caller's
// mistake, refused rather than compared with nothing.
func TestProtectedMustBeAbsolute(t *testing.T) {
	if _, err := policy.NewProtected([]policy.ProtectedPath{{Path: "var/lib/boxmaker", What: "BOXMAKER_HOME"}}); err == nil {
		t.Error("a relative path was accepted")
	}
}

// TestGrantsDirAlwaysProtected: with no other protected path, the grants
// directory still is, so that no grant can write grants.
func TestGrantsDirAlwaysProtected(t *testing.T) {
	dir := grantsDir(t, nil)
	os.WriteFile(filepath.Join(dir, "g.toml"), []byte(simple("write_file", `paths = ["`+filepath.Dir(dir)+`"]`)), 0o600)
	_, ps, _ := policy.LoadGrants(dir, nil)
	if len(ps) != 1 || !strings.Contains(ps[0].Problem, "contains the grants directory") {
		t.Errorf("problems %v", ps)
	}
}
