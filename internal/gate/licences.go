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
)

// licenceFileNames are the names pkg.go.dev reads as licence files, in
// lower case. The name only says where to look; the text decides.
var licenceFileNames = strings.Fields(`copying copying.md copying.markdown copying.txt
	licence licence.md licence.markdown licence.txt licence-2.0.txt licence-apache licence-apache-2.0.txt
	licence-mit licence.mit licence.code licence.docs licence.rst
	license license.md license.markdown license.txt license-2.0.txt license-apache license-apache-2.0.txt
	license-mit license.mit license.code license.docs license.rst
	mit-licence mit-licence.md mit-licence.markdown mit-licence.txt mit_licence
	mit-license mit-license.md mit-license.markdown mit-license.txt mit_license
	unlicence unlicense`)

// module is the part of go list -m -json the check reads.
type module struct {
	Path, Version, Dir string
	Main               bool
	Replace            *struct{ Path, Version string }
	Error              *struct{ Err string }
}

// reviewedLicence is a licence file a person has read: the allowed
// licences it grants (none for a file that covers nothing we ship, such as
// a documentation licence) and why it is accepted.
type reviewedLicence struct {
	ids []string
	why string
}

// reviewedLicenceFiles are licence files a person has read and found to be
// allowed licences although classify cannot tell (an extra note, say),
// keyed by the SHA-256 of the text, so that any change is read again. Each
// entry needs the owner's agreement and a reason. Nothing copyleft may be
// accepted for code we ship.
var reviewedLicenceFiles = map[string]reviewedLicence{
	// github.com/cyberphone/json-canonicalization: only Apache-2.0's
	// standard notice, no full text; the notice grants Apache-2.0.
	"6821faaddedf2d78c95bb6d98b127e9e616097afd2f6bcc34389f000d13ab12d": {[]string{"Apache-2.0"}, "Apache-2.0's standard notice alone (\"Licensed under the Apache License, Version 2.0\"), without the licence's text"},
	// github.com/cyphar/filepath-securejoin COPYING.md: the full texts of
	// BSD-3-Clause and MPL-2.0 and a note saying which files are under which.
	"83e36e42b3dacc3d447eca3049848b3e2ff66b6e1768a6a3cf3f27a57079bda4": {[]string{"BSD-3-Clause", "MPL-2.0"}, "BSD-3-Clause and MPL-2.0 in full, with a note listing which files each covers"},
	// github.com/kevinburke/ssh_config: MIT, then go-toml's MIT licence
	// for the lexer and parser borrowed from it.
	"a15a6f732df3a033a71853ce1d255bd671f00fbc537fa629b78d71baecda0ace": {[]string{"MIT"}, "MIT twice: its own and go-toml's, whose lexer and parser it borrows"},
	// github.com/klauspost/compress: BSD-3-Clause, Apache-2.0 and MIT in
	// full, with the directories each covers.
	"0d9e582ee4bff57bf1189c9e514e6da7ce277f9cd3bc2d488b22fbb39a6d87cf": {[]string{"Apache-2.0", "BSD-3-Clause", "MIT"}, "BSD-3-Clause, Apache-2.0 and MIT in full, with a list of the directories each covers"},
	// github.com/opencontainers/go-digest LICENSE.docs: CC BY-SA 4.0 for
	// the project's documentation (its Markdown files), which is neither
	// compiled into nor shipped with anything of ours; the code is
	// Apache-2.0 (LICENSE).
	"a1d1adec3ba691ef6e377a78bbe9e9e2501f2f4a1723d08857da1ac6564e4fed": {nil, "CC-BY-SA-4.0 for the documentation only; no documentation of it is shipped, its code is Apache-2.0"},
	// github.com/ulikunitz/xz: BSD-3-Clause whose third clause names the
	// author ("My name, Ulrich Kunitz, may not be used to endorse...")
	// instead of "Neither the name of the copyright holder nor...".
	"701cbcc144a7c865b072f27547e66ddbf17ac44a3bd21f71149ace02518f107c": {[]string{"BSD-3-Clause"}, "BSD-3-Clause with the author's name in the non-endorsement clause"},
	// gopkg.in/yaml.v3: MIT in full for the files ported from libyaml, and
	// Apache-2.0's standard notice for the rest.
	"d18f6323b71b0b768bb5e9616e36da390fbd39369a81807cca352de4e4e6aa0b": {[]string{"Apache-2.0", "MIT"}, "MIT in full for the libyaml ports, Apache-2.0's standard notice for the rest"},
	// sigs.k8s.io/yaml: MIT, BSD-3-Clause and Apache-2.0 for its own code
	// and its forks of go-yaml v2 and v3, with notes saying which is which.
	"5dc79da695aea39a47245008a168e3f7d461b686da8bec299fd55fee0393cbcc": {[]string{"Apache-2.0", "BSD-3-Clause", "MIT"}, "Apache-2.0, MIT and BSD-3-Clause for its code and its go-yaml forks, with notes saying which covers what"},
}

// checkLicences reads the licence of every module whose packages are
// linked into what we ship: the packages of ./... and of the module's tools,
// and everything they import, without tests (go list -deps -test=false,
// under the build tags in GOFLAGS). Modules that are only in the build list
// (the test dependencies of dependencies, say) are not compiled into
// anything we distribute; see decisions.md, "Licences of what is linked".
// Missing modules are downloaded first; a module replaced by a directory
// is read from that directory. Every licence file anywhere in a
// module (outside testdata) must be an allowed licence, the module root must
// have one, and where docs/dependencies.md names the module, the licence it
// gives must be the one the text says.
func checkLicences(dir string) ([]string, error) {
	// The go command records the sums of what it downloads in go.sum; an
	// alternate go.mod (-modfile) keeps the repository's go.sum as it is.
	modfile, err := scratchModFile(dir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Dir(modfile))
	if _, err := goCmd(dir, "mod", "download", "-modfile="+modfile, "all"); err != nil {
		return nil, err
	}
	out, err := goCmd(dir, "list", "-modfile="+modfile, "-m", "-e", "-json", "all")
	if err != nil {
		return nil, err
	}
	mods, err := decodeStream[module](out)
	if err != nil {
		return nil, fmt.Errorf("reading go list -m: %w", err)
	}
	linked, err := linkedModules(dir, modfile)
	if err != nil {
		return nil, err
	}
	documented := map[string]depRow{}
	if doc, err := os.ReadFile(filepath.Join(dir, depsDoc)); err == nil {
		rows, _ := parseDepsTable(string(doc)) // the deps check reports the table's problems
		for _, r := range rows {
			documented[r.module] = r
		}
	}
	var problems []string
	for _, m := range mods {
		if m.Main || !linked[m.Path] {
			continue
		}
		name := m.Path + "@" + m.Version
		if m.Replace != nil {
			name += " => " + strings.TrimSuffix(m.Replace.Path+"@"+m.Replace.Version, "@")
		}
		switch {
		case m.Error != nil:
			problems = append(problems, name+": "+m.Error.Err)
			continue
		case m.Dir == "":
			problems = append(problems, name+": not downloaded")
			continue
		}
		ids, p, err := moduleLicences(m.Dir, name)
		if err != nil {
			return nil, err
		}
		problems = append(problems, p...)
		if r, ok := documented[m.Path]; ok && len(ids) > 0 {
			for _, id := range strings.Split(r.licence, " OR ") {
				if !slices.Contains(ids, id) {
					problems = append(problems, fmt.Sprintf("%s:%d: %s is listed as %s, but its licence text is %s", depsDoc, r.line, m.Path, r.licence, strings.Join(ids, " and ")))
					break
				}
			}
		}
	}
	return problems, nil
}

// linkedModules returns the paths of the modules that provide a package
// that ./... or a tool of the module in dir imports, directly or not,
// leaving out tests.
func linkedModules(dir, modfile string) (map[string]bool, error) {
	out, err := goCmd(dir, "list", "-modfile="+modfile, "-deps", "-test=false", "-f", "{{with .Module}}{{.Path}}{{end}}", "./...", "tool")
	if err != nil {
		return nil, err
	}
	linked := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		linked[p] = true
	}
	return linked, nil
}

// moduleLicences classifies the licence files of the module in dir and
// returns the licences of those at its root.
func moduleLicences(dir, name string) ([]string, []string, error) {
	var rootIDs, problems []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != dir && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(licenceFileNames, strings.ToLower(d.Name())) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(text)) == "" {
			return nil // an empty file grants nothing and adds no terms (a test fixture, say)
		}
		ids, why := classify(string(text))
		if r, ok := reviewedLicenceFiles[fmt.Sprintf("%x", sha256.Sum256(text))]; ok {
			ids, why = r.ids, ""
		}
		if why != "" {
			problems = append(problems, fmt.Sprintf("%s: %s: %s", name, filepath.ToSlash(rel), why))
		}
		if filepath.Dir(rel) == "." {
			rootIDs = append(rootIDs, ids...)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if rootIDs == nil && len(problems) == 0 {
		problems = append(problems, name+": no licence file at the module's root")
	}
	return rootIDs, problems, nil
}

// scratchModFile copies dir's go.mod and go.sum into a new temporary
// directory and returns the copy of go.mod.
func scratchModFile(dir string) (string, error) {
	tmp, err := os.MkdirTemp("", "gate-licences-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) && name == "go.sum" {
			b, err = nil, nil
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, name), b, 0o644)
		}
		if err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
	}
	return filepath.Join(tmp, "go.mod"), nil
}
