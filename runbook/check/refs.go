package check

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Ref is one place in Go source that names a runbook anchor.
type Ref struct {
	Anchor string
	Pos    string // file:line, the file relative to the root
}

// literalRef finds anchors in string literals. The anchor is captured
// loosely so that a malformed one is reported rather than missed.
var literalRef = regexp.MustCompile(`docs/runbook\.md#([A-Za-z0-9_.-]*)`)

// Refs collects the references of every .go file under root, skipping
// vendor, testdata, node_modules and directories whose names start with "."
// or "_" (the go command ignores those too; .state is one). The problems are
// references the check cannot verify.
func Refs(root string) ([]Ref, []string, error) {
	module, err := modulePath(root)
	if err != nil {
		return nil, nil, err
	}
	var refs []Ref
	var problems []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (n == "vendor" || n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("runbook check: %w", err)
		}
		// Inside package runbook, See is called unqualified, and See itself
		// is the one place that may join the prefix to an anchor.
		home := filepath.ToSlash(filepath.Dir(rel)) == "runbook" && f.Name.Name == "runbook"
		r, p := fileRefs(fset, f, filepath.ToSlash(rel), module+"/runbook", home)
		refs = append(refs, r...)
		problems = append(problems, p...)
		return nil
	})
	return refs, problems, err
}

func fileRefs(fset *token.FileSet, f *ast.File, rel, runbookPath string, home bool) ([]Ref, []string) {
	var refs []Ref
	var problems []string
	pos := func(n ast.Node) string { return fmt.Sprintf("%s:%d", rel, fset.Position(n.Pos()).Line) }
	add := func(n ast.Node, anchor string) {
		if !anchorForm.MatchString(anchor) {
			problems = append(problems, fmt.Sprintf("%s: %q is not a runbook anchor (lowercase words joined by -)", pos(n), anchor))
			return
		}
		refs = append(refs, Ref{Anchor: anchor, Pos: pos(n)})
	}
	local := "" // the name runbook is imported as in this file
	if home {
		local = "."
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == runbookPath {
			local = "runbook"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err != nil {
				return true
			}
			for _, m := range literalRef.FindAllStringSubmatch(s, -1) {
				if m[1] == "" {
					if !home {
						problems = append(problems, fmt.Sprintf("%s: builds a runbook anchor at run time; use runbook.See with a literal anchor", pos(n)))
					}
					continue
				}
				add(n, m[1])
			}
		case *ast.CallExpr:
			if !isSee(n.Fun, local) {
				return true
			}
			var lit *ast.BasicLit
			if len(n.Args) == 1 {
				lit, _ = n.Args[0].(*ast.BasicLit)
			}
			if lit == nil || lit.Kind != token.STRING {
				problems = append(problems, fmt.Sprintf("%s: runbook.See needs a string literal, so the gate can check the anchor", pos(n)))
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil {
				add(n, s)
			}
			return false // the literal is the anchor, not a "docs/runbook.md#" string
		}
		return true
	})
	return refs, problems
}

// isSee reports whether fun is runbook.See as imported under local; "."
// stands for an unqualified See (a dot import, or package runbook itself).
func isSee(fun ast.Expr, local string) bool {
	switch fun := fun.(type) {
	case *ast.SelectorExpr:
		x, ok := fun.X.(*ast.Ident)
		return ok && local != "" && local != "." && x.Name == local && fun.Sel.Name == "See"
	case *ast.Ident:
		return local == "." && fun.Name == "See"
	}
	return false
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+(\S+)\s*$`)

func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	m := moduleLine.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
	}
	return strings.Trim(string(m[1]), `"`), nil
}
