package policy

import (
	"os"
	"slices"

	"boxmaker/wire"
)

// DecideGrants decides against grants held in memory (file stem to decoded
// grant), through every loading rule after TOML decoding (rule 9 against
// protected, which may be nil), and then exactly as Decide does. The
// property test uses it to run many more cases than it could write to disk.
func DecideGrants(grants map[string]wire.Grant, protected *Protected, req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	return DecideGrantsWith(grants, protected, nil, req, st, now)
}

// DecideGrantsWith is DecideGrants with check as the secret check.
func DecideGrantsWith(grants map[string]wire.Grant, protected *Protected, check func(SecretUse) error, req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	return DecideGrantsIn(grants, protected, check, Scope{}, req, st, now)
}

// DecideGrantsIn is DecideGrantsWith in scope.
func DecideGrantsIn(grants map[string]wire.Grant, protected *Protected, check func(SecretUse) error, scope Scope, req wire.ToolRequest, st State, now wire.Timestamp) Decision {
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
	return decideSet(set, problems, check, scope, req, st, now)
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

// PretendEUID makes the secrets rules take uid as the effective user's,
// until the test's cleanup: files the test made then belong to another.
func PretendEUID(t interface{ Cleanup(func()) }, uid int) {
	geteuid = func() int { return uid }
	t.Cleanup(func() { geteuid = os.Geteuid })
}

// FileProblems are the loading problems of one grant file named name
// holding data, rule 9 aside.
func FileProblems(name string, data []byte) []wire.GrantProblem {
	_, ps := checkFile(grantFile{name: name, data: data})
	out := make([]wire.GrantProblem, len(ps))
	for i, p := range ps {
		out[i] = p.forFile(name)
	}
	return out
}
