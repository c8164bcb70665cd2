package bxctl

import (
	"fmt"

	"boxmaker/policy"
	"boxmaker/runbook"
)

// grants check reads grant files itself, with the parser brokerd uses
// (package policy), so it needs no running daemon and reports exactly what
// brokerd would refuse.

type grantsCmd struct {
	Check grantsCheckCmd `cmd:"" help:"Check every grant file; print each problem as <file>:<line>: <problem>, or grants: ok."`
}

type grantsCheckCmd struct {
	Grants string `placeholder:"DIR" default:"/etc/boxmaker/grants" help:"The grants directory."`
}

// Run prints "grants: ok", or every problem and the runbook pointer with
// exit status 1. A directory that cannot be read is its own message, on
// stderr, also with status 1: brokerd would deny every call then too.
func (c *grantsCheckCmd) Run(e *env) error {
	_, problems, err := policy.LoadGrants(c.Grants)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s grants check: %s: %v\n%s\n", e.name, c.Grants, err, runbook.See("grants-invalid"))
		return exitCode(1)
	}
	if len(problems) == 0 {
		fmt.Fprintln(e.stdout, "grants: ok")
		return nil
	}
	for _, p := range problems {
		fmt.Fprintln(e.stdout, policy.FormatProblem(p))
	}
	fmt.Fprintln(e.stdout, runbook.See("grants-invalid"))
	return exitCode(1)
}
