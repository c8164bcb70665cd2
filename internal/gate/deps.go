package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// depsDoc is where every module the project requires earns its place.
const depsDoc = "docs/dependencies.md"

// depRow is one row of the table in docs/dependencies.md:
//
//	| Module | Version | Licence | Reason |
//	|---|---|---|---|
//	| `github.com/alecthomas/kong` | `v1.17.0` | MIT | Each role's command line. |
//
// Module and version may be in backquotes. The licence is one of
// allowedLicences, or several joined by " OR " for a choice.
type depRow struct {
	module, version, licence, reason string
	line                             int
}

// checkDeps: every require line of go.mod, direct or indirect, is in
// docs/dependencies.md with its exact version, a licence and a reason.
func checkDeps(dir string) ([]string, error) {
	out, err := goCmd(dir, "mod", "edit", "-json")
	if err != nil {
		return nil, err
	}
	var gomod struct {
		Require []struct {
			Path, Version string
			Indirect      bool
		}
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		return nil, fmt.Errorf("reading go mod edit -json: %w", err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, depsDoc))
	if err != nil {
		return nil, err
	}
	rows, problems := parseDepsTable(string(doc))
	byModule := map[string]depRow{}
	for _, r := range rows {
		byModule[r.module] = r
	}
	for _, req := range gomod.Require {
		r, ok := byModule[req.Path]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("go.mod requires %s %s, which %s does not list; add a row with its version, licence and the reason it earns its place", req.Path, req.Version, depsDoc))
		case r.version != req.Version:
			problems = append(problems, fmt.Sprintf("%s:%d: %s is at %s in go.mod, not %s", depsDoc, r.line, req.Path, req.Version, r.version))
		}
	}
	return problems, nil
}

// parseDepsTable reads every row of every table whose header is Module,
// Version, Licence, Reason, and reports rows that are not complete.
func parseDepsTable(doc string) ([]depRow, []string) {
	var rows []depRow
	var problems []string
	seen := map[string]int{}
	inTable := false
	for i, line := range strings.Split(doc, "\n") {
		cells, isRow := tableCells(line)
		if !isRow {
			inTable = false
			continue
		}
		if !inTable {
			inTable = len(cells) == 4 && strings.EqualFold(strings.Join(cells, "|"), "module|version|licence|reason")
			continue
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // the |---| line
		}
		r := depRow{module: strings.Trim(cells[0], "`"), line: i + 1}
		if len(cells) != 4 {
			problems = append(problems, fmt.Sprintf("%s:%d: a row needs 4 cells (module, version, licence, reason), not %d", depsDoc, i+1, len(cells)))
			continue
		}
		r.version, r.licence, r.reason = strings.Trim(cells[1], "`"), cells[2], cells[3]
		if prev, dup := seen[r.module]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: %s is listed again (first on line %d)", depsDoc, i+1, r.module, prev))
		}
		seen[r.module] = i + 1
		for _, id := range strings.Split(r.licence, " OR ") {
			if !slices.Contains(allowedLicences, id) {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: licence %q is not one of %s", depsDoc, i+1, r.module, r.licence, strings.Join(allowedLicences, ", ")))
				break
			}
		}
		if r.reason == "" {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: no reason given", depsDoc, i+1, r.module))
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		problems = append(problems, depsDoc+": no table with the header | Module | Version | Licence | Reason |")
	}
	return rows, problems
}

// tableCells splits a Markdown table row into trimmed cells.
func tableCells(line string) ([]string, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil, false
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts, true
}
