package main

import (
	"fmt"
	"slices"
	"strings"
)

// pkg is the part of go list's output the import check reads.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
	DepsErrors []*struct{ Err string }
}

// checkImports enforces rules.go on every package of the module in dir, from
// what the go command resolves, not from the text of import lines.
func checkImports(dir string) ([]string, error) {
	mod, err := goCmd(dir, "list", "-m")
	if err != nil {
		return nil, err
	}
	module := strings.TrimSpace(string(mod))
	out, err := goCmd(dir, "list", "-e", "-deps", "-json=ImportPath,Imports,Deps,Error,DepsErrors", "./...")
	if err != nil {
		return nil, err
	}
	pkgs, err := decodeStream[pkg](out)
	if err != nil {
		return nil, fmt.Errorf("reading go list: %w", err)
	}
	return importProblems(module, pkgs), nil
}

func importProblems(module string, pkgs []pkg) []string {
	graph := map[string][]string{}
	for _, p := range pkgs {
		graph[p.ImportPath] = p.Imports
	}
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, p := range pkgs {
		u, ours := unitOf(module, p.ImportPath)
		if !ours {
			continue
		}
		if _, ok := exemptUnits[u]; ok {
			continue
		}
		if p.Error != nil {
			report("%s: %s", p.ImportPath, p.Error.Err)
			continue
		}
		r, ok := ruleFor(u)
		if !ok {
			report("%s: no import rule for unit %q; add one, with its reason, to internal/gate/rules.go", p.ImportPath, u)
			continue
		}
		for _, imp := range p.Imports {
			iu, ours := unitOf(module, imp)
			if ours && iu != u && !slices.Contains(r.may, iu) {
				report("%s imports %s: %s may import %s (%s)", p.ImportPath, imp, u, orNothing(r.may), r.why)
			}
		}
		for _, b := range bans {
			if b.unit != u {
				continue
			}
			for _, d := range p.Deps {
				if chain, ok := outsideChain(module, graph, p.ImportPath, d); ok && matches(b.dep, d) {
					report("%s depends on %s, through %s: %s", p.ImportPath, d, chain, b.why)
				}
			}
		}
		for _, x := range exclusives {
			direct := slices.Contains(x.direct, u)
			for _, imp := range p.Imports {
				if matches(x.dep, imp) && !direct {
					report("%s imports %s: only %s may (%s)", p.ImportPath, imp, strings.Join(x.direct, ", "), x.why)
				}
			}
			if direct || slices.Contains(x.via, u) {
				continue
			}
			for _, d := range p.Deps {
				if chain, ok := outsideChain(module, graph, p.ImportPath, d); ok && matches(x.dep, d) && !slices.Contains(p.Imports, d) {
					report("%s depends on %s, through %s: only %s may (%s)", p.ImportPath, d, chain, strings.Join(x.direct, ", "), x.why)
				}
			}
		}
	}
	return problems
}

// unitOf says which unit of module an import path belongs to, if any.
func unitOf(module, importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return "", false
	}
	parts := strings.Split(rel, "/")
	if (parts[0] == "roles" || parts[0] == "internal") && len(parts) > 1 {
		return parts[0] + "/" + parts[1], true
	}
	return parts[0], true
}

func ruleFor(unit string) (rule, bool) {
	for _, r := range importRules {
		if r.unit == unit {
			return r, true
		}
	}
	return rule{}, false
}

// matches reports whether importPath is pattern, or under it when pattern
// ends in "/...".
func matches(pattern, importPath string) bool {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return importPath == tree || strings.HasPrefix(importPath, tree+"/")
	}
	return importPath == pattern
}

func orNothing(units []string) string {
	if len(units) == 0 {
		return "nothing of ours"
	}
	return "only " + strings.Join(units, ", ")
}

// outsideChain finds a chain of imports from one package of ours to a
// dependency that passes through no other package of ours. A dependency
// reached only through our own packages is not reported here: each of those
// packages is checked itself, and reporting it once, where it starts, keeps
// the output to the causes.
func outsideChain(module string, graph map[string][]string, from, to string) (string, bool) {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for q := to; q != ""; q = prev[q] {
				chain = append(chain, q)
			}
			slices.Reverse(chain)
			return strings.Join(chain, " -> "), true
		}
		if _, ours := unitOf(module, p); ours && p != from {
			continue
		}
		for _, next := range graph[p] {
			if _, seen := prev[next]; !seen {
				prev[next] = p
				queue = append(queue, next)
			}
		}
	}
	return "", false
}
