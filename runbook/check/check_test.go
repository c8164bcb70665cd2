package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The planted sources below spell the pointer as two literals joined at run
// time, so that this file itself names no anchor.
const ref = "docs/runbook.md" + "#"

func entry(anchor string) string {
	return "## " + anchor + "\n\n" + strings.Join(Parts, " text.\n\n") + " text.\n\n"
}

// repo writes a module named example with the given files.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example\n\ngo 1.26\n"
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func run(t *testing.T, files map[string]string) []string {
	t.Helper()
	problems, err := Check(repo(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

const seeFile = `package a

import rb "example/runbook"

var _ = rb.See("grants-invalid")
`

func TestCleanRepositoryPasses(t *testing.T) {
	problems := run(t, map[string]string{
		"docs/runbook.md": "# Runbook\n\nIntro.\n\n" + entry("grants-invalid") + entry("audit-unavailable"),
		"a/a.go":          "package a\n\nconst msg = \"denied; see " + ref + "audit-unavailable\"\n",
		"a/b.go":          seeFile,
		"runbook/r.go":    "package runbook\n\nfunc See(a string) string { return \"see " + ref + "\" + a }\n",
	})
	if len(problems) != 0 {
		t.Errorf("a clean repository fails: %q", problems)
	}
}

func TestPlantedMissingHeadingFails(t *testing.T) {
	problems := run(t, map[string]string{
		"docs/runbook.md":    entry("grants-invalid"),
		"roles/x/x.go":       "package x\n\nvar _ = []string{\n\t\"see " + ref + "grants-invalid\",\n\t\"see " + ref + "not-written\",\n}\n",
		"roles/x/see.go":     strings.Replace(seeFile, "grants-invalid", "also-missing", 1),
		"testdata/t.go":      "package t\n\nvar _ = \"" + ref + "ignored-in-testdata\"\n",
		".state/s.go":        "package s\n\nvar _ = \"" + ref + "ignored-in-state\"\n",
		"vendor/v/v.go":      "package v\n\nvar _ = \"" + ref + "ignored-in-vendor\"\n",
		"roles/x/x_test.go":  "package x\n\nvar _ = \"" + ref + "named-in-a-test\"\n",
		"roles/x/comment.go": "package x\n\n// " + ref + "comments-do-not-count\n",
	})
	want := []string{
		`roles/x/x.go:5: names the runbook anchor "not-written", but docs/runbook.md has no heading "## not-written"`,
		`roles/x/see.go:5: names the runbook anchor "also-missing"`,
		`roles/x/x_test.go:3: names the runbook anchor "named-in-a-test"`,
	}
	assertProblems(t, problems, want)
}

func TestUncheckableReferencesFail(t *testing.T) {
	problems := run(t, map[string]string{
		"docs/runbook.md": entry("grants-invalid"),
		"a/a.go": `package a

import "example/runbook"

func f(anchor string) []string {
	return []string{runbook.See(anchor), "see ` + ref + `" + anchor, "` + ref + `Bad_Anchor"}
}
`,
	})
	assertProblems(t, problems, []string{
		"a/a.go:6: runbook.See needs a string literal",
		"a/a.go:6: builds a runbook anchor at run time",
		`a/a.go:6: "Bad_Anchor" is not a runbook anchor`,
	})
}

func TestEntriesNeedFivePartsAndAnchorHeadings(t *testing.T) {
	short := "## audit-recovered\n\n" + strings.Join(Parts[:3], " x\n") + " x\n" + Parts[4] + " x\n\n"
	problems := run(t, map[string]string{
		"docs/runbook.md": short + "## Grants Invalid\n\n" + entry("grants-invalid") + entry("grants-invalid"),
	})
	assertProblems(t, problems, []string{
		`docs/runbook.md:1: entry "audit-recovered" lacks **How to fix.**`,
		`docs/runbook.md:8: heading "Grants Invalid" is not an anchor`,
		`docs/runbook.md:8: entry "Grants Invalid" lacks **What you see.**`,
		`a second entry "grants-invalid"`,
	})
}

func assertProblems(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no problem contains %q; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
