package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// goFiles lists the .go files git tracks in dir, plus new ones it would
// track (not ignored), so that a file is checked before its first commit.
// Files deleted from the working tree are left out.
func goFiles(dir string) ([]string, error) { return trackedFiles(dir, "*.go") }

// trackedFiles is goFiles for any pathspec pattern ("*.nix").
func trackedFiles(dir, pattern string) ([]string, error) {
	out, err := command(dir, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", pattern)
	if err != nil {
		return nil, err
	}
	var files []string
	seen := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		if _, err := os.Lstat(filepath.Join(dir, f)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

const maxLines = 500

// checkFileLen keeps files small enough to read in one sitting.
func checkFileLen(dir string) ([]string, error) {
	files, err := goFiles(dir)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		if n := countLines(b); n > maxLines {
			problems = append(problems, fmt.Sprintf("%s: %d lines, more than %d; split it by purpose", f, n, maxLines))
		}
	}
	return problems, nil
}

// countLines counts lines as an editor numbers them: a last line without a
// newline still counts.
func countLines(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// checkGofmt runs gofmt -l over the same files.
func checkGofmt(dir string) ([]string, error) {
	files, err := goFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, nil
	}
	out, err := command(dir, gofmtPath(), append([]string{"-l"}, files...)...)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, f := range strings.Fields(string(out)) {
		problems = append(problems, f+": not gofmt-formatted; run gofmt -w "+f)
	}
	return problems, nil
}

// gofmtPath prefers the gofmt of the Go installation running the gate, so
// that the formatting rules match the compiler's release.
func gofmtPath() string {
	out, err := goCmd(".", "env", "GOROOT")
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "gofmt")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "gofmt"
}
