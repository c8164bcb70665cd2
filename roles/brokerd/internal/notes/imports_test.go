package notes

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestImports: the store imports the standard library, wire and runbook,
// nothing else (issue 17: brokerd wires it; it must not reach policy, the
// runner or Podman). The gate's rule for brokerd allows more, so this
// package keeps its own, narrower list. wire and runbook import nothing of
// ours (the gate checks), so this bounds what the store reaches.
func TestImports(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			std := !strings.Contains(first, ".") && first != "boxmaker"
			if !std && p != "boxmaker/wire" && p != "boxmaker/runbook" {
				t.Errorf("%s imports %s: only the standard library, boxmaker/wire and boxmaker/runbook", name, p)
			}
		}
	}
}
