package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"nosuch"}, {"-nosuchflag"}} {
		var out, errs bytes.Buffer
		if code := run(args, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage: go run ./internal/gate") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs.String())
		}
	}
}

func TestRunReportsProblemsAndFails(t *testing.T) {
	// A repository whose runbook lacks an entry its code names.
	dir := writeTree(t, map[string]string{
		"go.mod":          "module example\n\ngo 1.26\n",
		"docs/runbook.md": "# Runbook\n",
		"a/a.go":          "package a\n\nvar _ = \"see docs/runbook.md\" + \"#x\"\nvar _ = \"" + "docs/runbook.md" + "#" + "missing\"\n",
	})
	var out, errs bytes.Buffer
	code := run([]string{"-C", dir, "runbook"}, &out, &errs)
	if code != 1 || !strings.Contains(out.String(), `gate: runbook: a/a.go:4: names the runbook anchor "missing"`) || !strings.Contains(out.String(), "gate: runbook: FAIL, 1 problems") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out.String(), errs.String())
	}
	// With the entry written, it passes.
	dir = writeTree(t, map[string]string{
		"go.mod":          "module example\n\ngo 1.26\n",
		"docs/runbook.md": "## missing\n\n**What you see.** a\n**Why the system refuses.** b\n**How to confirm.** c\n**How to fix.** d\n**How to check the fix.** e\n",
		"a/a.go":          "package a\n\nvar _ = \"" + "docs/runbook.md" + "#" + "missing\"\n",
	})
	out.Reset()
	errs.Reset()
	if code := run([]string{"-C", dir, "runbook"}, &out, &errs); code != 0 || !strings.HasPrefix(out.String(), "gate: runbook: ok") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out.String(), errs.String())
	}
}
