package main

import (
	"testing"
)

const plantedGoMod = `module example

go 1.26

require (
	example.com/direct v1.2.3
	example.com/other v1.0.0
)

require example.com/indirect v0.1.0 // indirect
`

const goodTable = "# Dependencies\n\nSome prose.\n\n" +
	"| Module | Version | Licence | Reason |\n" +
	"|---|---|---|---|\n" +
	"| `example.com/direct` | `v1.2.3` | MIT | Parses things. |\n" +
	"| example.com/other | v1.0.0 | MIT OR Apache-2.0 | Prints things. |\n" +
	"| `example.com/indirect` | `v0.1.0` | BSD-3-Clause | Needed by direct. |\n" +
	"| `example.com/planned` | `v9.9.9` | ISC | Listed ahead of its issue. |\n"

func TestDepsPassesACompleteTable(t *testing.T) {
	dir := writeTree(t, map[string]string{"go.mod": plantedGoMod, depsDoc: goodTable})
	problems, err := checkDeps(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems)
}

func TestDepsFindsPlantedProblems(t *testing.T) {
	doc := "| Module | Version | Licence | Reason |\n" +
		"|---|---|---|---|\n" +
		"| `example.com/direct` | `v1.2.2` | MIT | Parses things. |\n" +
		"| `example.com/other` | `v1.0.0` | GPL-3.0 | Prints things. |\n" +
		"| `example.com/other` | `v1.0.0` | MIT | Again. |\n" +
		"| `example.com/extra` | `v1.0.0` |  |  |\n" +
		"| `example.com/short` | `v1.0.0` | MIT |\n"
	dir := writeTree(t, map[string]string{"go.mod": plantedGoMod, depsDoc: doc})
	problems, err := checkDeps(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems,
		"docs/dependencies.md:3: example.com/direct is at v1.2.3 in go.mod, not v1.2.2",
		`docs/dependencies.md:4: example.com/other: licence "GPL-3.0" is not one of MIT, BSD-2-Clause`,
		"docs/dependencies.md:5: example.com/other is listed again (first on line 4)",
		`docs/dependencies.md:6: example.com/extra: licence "" is not one of`,
		"docs/dependencies.md:6: example.com/extra: no reason given",
		"docs/dependencies.md:7: a row needs 4 cells",
		"go.mod requires example.com/indirect v0.1.0, which docs/dependencies.md does not list",
	)
}

func TestDepsNeedsTheTable(t *testing.T) {
	dir := writeTree(t, map[string]string{"go.mod": plantedGoMod, depsDoc: "| Name | Version |\n|---|---|\n| example.com/direct | v1.2.3 |\n"})
	problems, err := checkDeps(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems,
		"no table with the header | Module | Version | Licence | Reason |",
		"go.mod requires example.com/direct v1.2.3",
		"go.mod requires example.com/other v1.0.0",
		"go.mod requires example.com/indirect v0.1.0",
	)
	if _, err := checkDeps(writeTree(t, map[string]string{"go.mod": plantedGoMod})); err == nil {
		t.Error("no docs/dependencies.md, and the check ran")
	}
}
