package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitTree is writeTree in a git repository with every file but the
// untracked ones added.
func gitTree(t *testing.T, files map[string]string, untracked ...string) string {
	t.Helper()
	dir := writeTree(t, files)
	if _, err := command(dir, "git", "init", "-q"); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		skip := false
		for _, u := range untracked {
			skip = skip || u == name
		}
		if !skip {
			if _, err := command(dir, "git", "add", "-f", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func lines(n int) string {
	return "package a\n" + strings.Repeat("\n", n-1)
}

func TestFileLen(t *testing.T) {
	dir := gitTree(t, map[string]string{
		".gitignore":      "/ignored/\n",
		"a/ok.go":         lines(500),
		"a/long.go":       lines(501),
		"a/new.go":        lines(600),  // not yet added, but not ignored: checked
		"ignored/big.go":  lines(1000), // ignored: not the repository's
		"a/notes.txt":     lines(1000), // not Go
		"a/gone.go":       "package a\n",
		"a/noeol_ok.go":   strings.TrimSuffix(lines(500), "\n") + "x",
		"a/noeol_long.go": lines(500) + "x",
	}, "a/new.go", "ignored/big.go")
	// A file deleted from the working tree but still in the index.
	if err := os.Remove(filepath.Join(dir, "a", "gone.go")); err != nil {
		t.Fatal(err)
	}
	problems, err := checkFileLen(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems,
		"a/long.go: 501 lines, more than 500",
		"a/new.go: 600 lines",
		"a/noeol_long.go: 501 lines",
	)
}

func TestGofmt(t *testing.T) {
	dir := gitTree(t, map[string]string{
		"a/good.go":    "package a\n\nfunc F() {}\n",
		"a/bad.go":     "package a\nfunc  G( ) {\n}\n",
		"a/new_bad.go": "package a\nvar   x = 1\n",
	}, "a/new_bad.go")
	problems, err := checkGofmt(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems, "a/bad.go: not gofmt-formatted", "a/new_bad.go: not gofmt-formatted")

	clean := gitTree(t, map[string]string{"a/good.go": "package a\n\nfunc F() {}\n"})
	if problems, err := checkGofmt(clean); err != nil || len(problems) != 0 {
		t.Errorf("a formatted tree: %q, %v", problems, err)
	}
}

func TestFileChecksNeedGit(t *testing.T) {
	// Outside a git repository the checks cannot list files: they fail
	// rather than pass on nothing.
	dir := writeTree(t, map[string]string{"a.go": lines(900)})
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	if _, err := checkFileLen(dir); err == nil {
		t.Error("filelen ran outside a git repository")
	}
}
