package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

// now is the fixed clock of the table tests: 2026-09-18T12:00:00.000Z.
var now = mustTime("2026-09-18T12:00:00.000Z")

func mustTime(s string) wire.Timestamp {
	ts, err := wire.ParseTimestamp(s)
	if err != nil {
		panic(err)
	}
	return ts
}

// grantsDir writes files (name to content) into a fresh directory.
func grantsDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// request builds a tool request for session "s1", call 1.
func request(tool, args string) wire.ToolRequest {
	sid, err := wire.NewSessionID("s1")
	if err != nil {
		panic(err)
	}
	return wire.ToolRequest{Session: sid, Call: 1, Tool: tool, Arguments: args}
}

var private = policy.State{Taint: wire.Private}

// outcomeName is "allowed", "ask" or the denial reason, for compact tables.
func outcomeName(d policy.Decision) string {
	switch o := d.Outcome().(type) {
	case wire.OutcomeAllowed:
		return "allowed"
	case wire.OutcomeAsk:
		return "ask"
	case wire.OutcomeDenied:
		return o.Reason.String()
	}
	return "?"
}

// grantID is the matched grant's id, or "".
func grantID(d policy.Decision) string {
	g, ok := d.Grant()
	if !ok {
		return ""
	}
	return g.ID
}

// simple is a grant file for tool with mode auto, max_taint secret and the
// given constraint lines.
func simple(tool string, constraints string) string {
	return "tool = \"" + tool + "\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\n[constraints]\n" + constraints + "\n"
}
