package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// licenceModule is a module named example that requires one module per
// case, each replaced by a directory so that the check runs offline. Its
// command imports each of them, so that they are linked, except those
// named unlinked* (required only) and testonly* (imported by a test only).
func licenceModule(t *testing.T, mods map[string]map[string]string, doc string) string {
	t.Helper()
	var req, repl, imports, testImports strings.Builder
	files := map[string]string{depsDoc: doc}
	for name, contents := range mods {
		fmt.Fprintf(&req, "\texample.com/%s v1.0.0\n", name)
		fmt.Fprintf(&repl, "\texample.com/%s => ./third/%s\n", name, name)
		switch {
		case strings.HasPrefix(name, "unlinked"):
		case strings.HasPrefix(name, "testonly"):
			fmt.Fprintf(&testImports, "import _ \"example.com/%s\"\n", name)
		default:
			fmt.Fprintf(&imports, "import _ \"example.com/%s\"\n", name)
		}
		files["third/"+name+"/go.mod"] = "module example.com/" + name + "\n\ngo 1.26\n"
		files["third/"+name+"/lib.go"] = "package lib\n"
		for f, body := range contents {
			files["third/"+name+"/"+f] = body
		}
	}
	files["go.mod"] = "module example\n\ngo 1.26\n\nrequire (\n" + req.String() + ")\n\nreplace (\n" + repl.String() + ")\n"
	files["main.go"] = "package main\n\n" + imports.String() + "\nfunc main() {}\n"
	files["main_test.go"] = "package main\n\n" + testImports.String()
	return writeTree(t, files)
}

const gplText = "This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public License."

func TestLicencesPassesAllowedModules(t *testing.T) {
	offline(t)
	dir := licenceModule(t, map[string]map[string]string{
		"mit":  {"LICENSE": licenceText(t, "MIT"), "sub/COPYING": licenceText(t, "BSD-3-Clause"), "testdata/LICENSE": gplText},
		"dual": {"LICENSE-MIT": licenceText(t, "MIT"), "LICENSE-APACHE": licenceText(t, "Apache-2.0")},
		// an empty licence file (a test fixture) grants nothing and adds nothing
		"fixture": {"LICENSE": licenceText(t, "ISC"), "tests/case1/LICENSE": "", "tests/case2/LICENSE": "\n"},
		// linked into nothing we ship, so not read: a test dependency of a
		// dependency, and a module only a test imports
		"unlinkedgpl": {"COPYING": gplText},
		"testonlygpl": {"COPYING": gplText},
	}, "| Module | Version | Licence | Reason |\n|---|---|---|---|\n"+
		"| `example.com/mit` | `v1.0.0` | MIT | x |\n| `example.com/dual` | `v1.0.0` | MIT OR Apache-2.0 | x |\n")
	problems, err := checkLicences(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems)
}

func TestLicencesFindsPlantedProblems(t *testing.T) {
	offline(t)
	noted := licenceText(t, "MIT") + "\nThis file is generated. Do not edit.\n"
	dir := licenceModule(t, map[string]map[string]string{
		"gpl":      {"COPYING": gplText},
		"none":     {"README.md": licenceText(t, "MIT")}, // a licence, but not in a licence file
		"subbad":   {"LICENSE": licenceText(t, "MIT"), "vendored/LICENSE.txt": gplText},
		"wrongdoc": {"LICENSE": licenceText(t, "BSD-3-Clause")},
		"noted":    {"LICENSE.md": noted},
		"empty":    {"LICENSE": "\n"},
	}, "| Module | Version | Licence | Reason |\n|---|---|---|---|\n| `example.com/wrongdoc` | `v1.0.0` | MIT | x |\n")
	problems, err := checkLicences(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems,
		"example.com/gpl@v1.0.0 => ./third/gpl: COPYING: not the text of any allowed licence",
		"example.com/none@v1.0.0 => ./third/none: no licence file at the module's root",
		"example.com/subbad@v1.0.0 => ./third/subbad: vendored/LICENSE.txt: not the text of any allowed licence",
		"docs/dependencies.md:3: example.com/wrongdoc is listed as MIT, but its licence text is BSD-3-Clause",
		`example.com/noted@v1.0.0 => ./third/noted: LICENSE.md: MIT text with 7 words of other text: "this file is generated do not edit"`,
		"example.com/empty@v1.0.0 => ./third/empty: no licence file at the module's root",
	)

	// A person reads the noted file and records it, pinned by its hash.
	reviewedLicenceFiles[fmt.Sprintf("%x", sha256.Sum256([]byte(noted)))] = reviewedLicence{[]string{"MIT"}, "a generated-file note"}
	defer clear(reviewedLicenceFiles)
	problems, err = checkLicences(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.Contains(p, "noted") {
			t.Errorf("a reviewed file is still refused: %s", p)
		}
	}
}

func TestLicencesLeavesGoSumAlone(t *testing.T) {
	// kong is one of boxmaker's own modules, so it is in the module cache;
	// without -modfile, downloading it would record its sums in go.sum.
	offline(t)
	t.Setenv("GOSUMDB", "off")
	dir := writeTree(t, map[string]string{
		"go.mod":  "module example\n\ngo 1.26\n\nrequire github.com/alecthomas/kong v1.17.0\n",
		"main.go": "package main\n\nimport _ \"github.com/alecthomas/kong\"\n\nfunc main() {}\n",
	})
	problems, err := checkLicences(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems)
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the check wrote go.sum (%v)", err)
	}
}

func TestLicencesFailsWhenAModuleCannotBeDownloaded(t *testing.T) {
	offline(t)
	dir := writeTree(t, map[string]string{
		"go.mod":  "module example\n\ngo 1.26\n\nrequire example.com/absent v1.0.0\n",
		"main.go": "package main\n\nimport _ \"example.com/absent\"\n\nfunc main() {}\n",
	})
	if _, err := checkLicences(dir); err == nil {
		t.Error("the check passed with a module it could not download")
	}
}

func TestReviewedLicenceFilesAreAllowed(t *testing.T) {
	// An exception may only grant allowed licences; none may let copyleft in.
	for sum, r := range reviewedLicenceFiles {
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			t.Errorf("%s: not a SHA-256 in hex", sum)
		}
		if r.why == "" {
			t.Errorf("%s: no reason", sum)
		}
		for _, id := range r.ids {
			if !slices.Contains(allowedLicences, id) {
				t.Errorf("%s: %s is not an allowed licence", sum, id)
			}
		}
	}
}
