// Package check is the runbook gate: every runbook anchor that Go source
// names, as a "docs/runbook.md#<anchor>" string literal or as
// runbook.See("<anchor>"), must have a "## <anchor>" entry in
// docs/runbook.md, and every entry must have the five parts the spec asks
// for. It is a package of its own so that the roles, which import runbook,
// do not link a Go parser.
package check

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Parts are the lead-ins every entry has, in this order (M3a §11).
var Parts = []string{
	"**What you see.**",
	"**Why the system refuses.**",
	"**How to confirm.**",
	"**How to fix.**",
	"**How to check the fix.**",
}

var anchorForm = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Check runs the whole check on the repository at root and returns one line
// per problem; none means it passed. The error is for what stopped the
// check from running at all.
func Check(root string) ([]string, error) {
	refs, problems, err := Refs(root)
	if err != nil {
		return nil, err
	}
	md, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	if err != nil {
		return nil, err
	}
	entries, entryProblems := Entries(md)
	problems = append(problems, entryProblems...)
	for _, r := range refs {
		if !entries[r.Anchor] {
			problems = append(problems, fmt.Sprintf("%s: names the runbook anchor %q, but docs/runbook.md has no heading \"## %s\"", r.Pos, r.Anchor, r.Anchor))
		}
	}
	return problems, nil
}

// Entries reads a runbook: the set of its "## " headings, and its problems
// (a heading that is not an anchor, a duplicate, a missing part).
func Entries(md []byte) (map[string]bool, []string) {
	entries := map[string]bool{}
	var problems []string
	var name string
	var line0 int // the heading's line
	var body []string
	flush := func() {
		if name == "" {
			return
		}
		next := 0
		for _, line := range body {
			if next < len(Parts) && strings.HasPrefix(strings.TrimSpace(line), Parts[next]) {
				next++
			}
		}
		if next < len(Parts) {
			problems = append(problems, fmt.Sprintf("docs/runbook.md:%d: entry %q lacks %s (the parts are, in order: %s)", line0, name, Parts[next], strings.Join(Parts, " ")))
		}
	}
	for i, line := range strings.Split(string(md), "\n") {
		heading, ok := strings.CutPrefix(line, "## ")
		if !ok {
			body = append(body, line)
			continue
		}
		flush()
		name, line0, body = strings.TrimSpace(heading), i+1, nil
		switch {
		case !anchorForm.MatchString(name):
			problems = append(problems, fmt.Sprintf("docs/runbook.md:%d: heading %q is not an anchor (lowercase words joined by -)", i+1, name))
		case entries[name]:
			problems = append(problems, fmt.Sprintf("docs/runbook.md:%d: a second entry %q", i+1, name))
		}
		entries[name] = true
	}
	flush()
	return entries, problems
}
