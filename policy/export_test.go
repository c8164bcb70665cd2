package policy

import (
	"slices"

	"boxmaker/wire"
)

// DecideGrants decides against grants held in memory (file stem to decoded
// grant), through every loading rule after TOML decoding (rule 9 against
// protected, which may be nil), and then exactly as Decide does. The
// property test uses it to run many more cases than it could write to disk.
func DecideGrants(grants map[string]wire.Grant, protected *Protected, req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	names := make([]string, 0, len(grants))
	for id := range grants {
		names = append(names, id)
	}
	slices.Sort(names)
	set, problems := collect(len(names), func(i int) (string, grant, []problem) {
		name := names[i] + grantExt
		g, ps := checkDecoded(name, nil, grants[names[i]], checkStem(name))
		return name, g, append(ps, protected.problems(nil, g, nil)...)
	})
	return decideSet(set, problems, nil, req, st, now)
}

// HoldReads makes every GrantsDir read call hold once it has its result,
// until the test's cleanup.
func HoldReads(t interface{ Cleanup(func()) }, hold func()) {
	readDone = hold
	t.Cleanup(func() { readDone = func() {} })
}

// Remembered lists the files g keeps from its last read, sorted.
func (g *GrantsDir) Remembered() []string {
	var names []string
	for name := range g.last {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Overlap is rule 9's comparison of two clean paths, without the file
// system: "is", "contains", "lies inside" or "".
func Overlap(g, p string) string { return overlap(g, p) }
