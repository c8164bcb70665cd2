package policy

import (
	"errors"
	"fmt"
	"strings"

	"boxmaker/wire"
)

// problem is one reason a file is invalid, before the file name is attached.
// line is 1-based, 0 when unknown.
type problem struct {
	line uint64
	text string
}

func (p problem) forFile(name string) wire.GrantProblem {
	gp := wire.GrantProblem{File: name, Problem: p.text}
	if p.line > 0 {
		l := p.line
		gp.Line = &l
	}
	return gp
}

// The problem text the spec fixes (M3a §3, "Loading", rule 5). Rule 4's
// "secrets are not supported until M4" is lifted by issue 15: checkSecret.
const msgPatterns = "patterns are not supported"

// checkFile applies the loading rules to one file and returns every problem
// it finds, not only the first, so the owner can fix a file in one pass.
func checkFile(f grantFile) (grant, []problem) {
	ps := checkStem(f.name)
	if f.readErr != nil { // rule 1
		return grant{}, append(ps, problem{0, "cannot be read: " + f.readErr.Error()})
	}
	g, err := wire.DecodeGrant(f.data)
	if err != nil { // rule 1
		return grant{}, append(ps, decodeProblem(err))
	}
	return checkDecoded(f.name, f.data, g, ps)
}

// checkStem is rule 2: the file stem is the grant id.
func checkStem(name string) []problem {
	if id := strings.TrimSuffix(name, grantExt); !wire.ValidID(id) {
		return []problem{{0, fmt.Sprintf("the file stem %q is not a valid grant id (1 to 64 characters of [a-z0-9-])", id)}}
	}
	return nil
}

// checkDecoded applies rules 3 to 8 to a decoded grant, after the problems
// ps already found, and builds the grant. A grant with problems is never
// used (collect drops it); it is returned whole so that rule 9, which the
// GrantsDir applies at every read, can report its paths in the same pass.
func checkDecoded(name string, data []byte, g wire.Grant, ps []problem) (grant, []problem) {
	ps = append(ps, checkGrant(data, g)...)
	tool, _ := ParseTool(g.Tool)
	gr := grant{id: strings.TrimSuffix(name, grantExt), sha: wire.Sha256(data), tool: tool, g: g}
	if g.Secret != nil {
		gr.secretLine = keyLine(data, "secret")
	}
	return gr, ps
}

func decodeProblem(err error) problem {
	var ge *wire.GrantError
	if errors.As(err, &ge) {
		text := ge.Problem
		if ge.Field != "" {
			text = ge.Field + ": " + text
		}
		return problem{ge.Line, text}
	}
	return problem{0, err.Error()}
}

// checkGrant applies rules 3 to 8 to a decoded grant. data is the file, used
// only to point each problem at a line; it may be nil.
func checkGrant(data []byte, g wire.Grant) []problem {
	var ps []problem
	add := func(line uint64, field, format string, args ...any) {
		ps = append(ps, problem{line, field + ": " + fmt.Sprintf(format, args...)})
	}
	tool, known := ParseTool(g.Tool)
	if !known { // rule 3
		add(keyLine(data, "tool"), "tool", "%q is not one of %s", g.Tool, strings.Join(toolNames[1:], ", "))
	}
	if g.Job != nil && !wire.ValidID(*g.Job) { // issue 17: a job-scoped grant
		add(keyLine(data, "job"), "job", "%q is not a valid job name (1 to 64 characters of [a-z0-9-])", *g.Job)
	}
	checkSecret(data, g, tool, known, add) // rule 4, as issue 15 has it
	c := g.Constraints
	if len(c.Patterns) > 0 { // rule 5
		add(keyLine(data, "patterns"), "constraints.patterns", msgPatterns)
	}
	if known { // rule 6
		paths, hosts := takes(tool)
		for _, k := range []struct {
			field string
			rule  constraintRule
			n     int
			what  string
		}{{"paths", paths, len(c.Paths), "path"}, {"hosts", hosts, len(c.Hosts), "host"}} {
			switch {
			case k.rule == mustHave && k.n == 0:
				add(keyLine(data, k.field), "constraints."+k.field, "%s requires at least one %s", tool, k.what)
			case k.rule == mustNotHave && k.n > 0:
				add(keyLine(data, k.field), "constraints."+k.field, "%s takes no %ss", tool, k.what)
			}
		}
	}
	for _, p := range c.Paths { // rule 7
		if err := CheckPath(p); err != nil {
			add(itemLine(data, "paths", p), "constraints.paths", "%q is not a valid absolute path: it %v", p, err)
		}
	}
	for _, h := range c.Hosts { // rule 8
		if err := CheckHostPattern(h); err != nil {
			add(itemLine(data, "hosts", h), "constraints.hosts", "%q is not a valid host pattern: it %v", h, err)
		}
	}
	return ps
}

// constraintRule is one cell of rule 6's table.
type constraintRule uint8

const (
	mayHave constraintRule = iota
	mustHave
	mustNotHave
)

// takes is rule 6's table: which constraints each tool requires, allows or
// forbids. remember and recall take none: brokerd runs them itself, on its
// own notes directory, so there is no path, host or pattern to narrow.
func takes(t Tool) (paths, hosts constraintRule) {
	switch t {
	case ReadFile, WriteFile:
		return mustHave, mustNotHave
	case Shell:
		return mayHave, mustNotHave
	case HTTPFetch:
		return mustNotHave, mustHave
	case Remember, Recall:
		return mustNotHave, mustNotHave
	}
	return mustNotHave, mustNotHave
}
