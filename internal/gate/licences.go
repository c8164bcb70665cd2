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

// reviewedLicenceFiles are licence files a person has read and found to be
// an allowed licence although classify cannot tell (an extra note, say),
// keyed by the SHA-256 of the text, so that any change is read again. Each
// entry needs the owner's agreement and a reason.
var reviewedLicenceFiles = map[string]struct{ id, why string }{}

// checkLicences reads the licence of every module in the build list,
// downloading any that are missing first; a module replaced by a directory
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
	documented := map[string]depRow{}
	if doc, err := os.ReadFile(filepath.Join(dir, depsDoc)); err == nil {
		rows, _ := parseDepsTable(string(doc)) // the deps check reports the table's problems
		for _, r := range rows {
			documented[r.module] = r
		}
	}
	var problems []string
	for _, m := range mods {
		if m.Main {
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
		ids, why := classify(string(text))
		if r, ok := reviewedLicenceFiles[fmt.Sprintf("%x", sha256.Sum256(text))]; ok {
			ids, why = []string{r.id}, ""
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
