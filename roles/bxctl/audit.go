package bxctl

import (
	"fmt"
	"path/filepath"

	"boxmaker/audit"
)

// audit verify reads <home>/audit/ itself with the chain verifier brokerd
// uses (package audit), so it needs no running daemon. The verifying and
// the wording live in package audit; this is only the command.

type auditCmd struct {
	Verify auditVerifyCmd `cmd:"" help:"Verify the whole audit chain; print audit: ok, or the first failure as <file>:<line>: <what>."`
}

type auditVerifyCmd struct {
	Home string `placeholder:"PATH" help:"BOXMAKER_HOME to read (default: $BOXMAKER_HOME, else /var/lib/boxmaker)."`
}

// Run prints "audit: ok, <n> records, head <hex>" and what the owner should
// know (recoveries, accepted breaks, abandoned approvals, clock warnings),
// or the first failure and the runbook pointer with exit status 1. A log
// that cannot be read is its own message, on stderr, also with status 1.
func (c *auditVerifyCmd) Run(e *env) error {
	home := c.Home
	if home == "" {
		home = defaultHome()
	}
	rep, err := audit.VerifyDir(filepath.Join(home, "audit"))
	if err != nil {
		fmt.Fprintf(e.stderr, "%s audit verify: %v\n", e.name, err)
		return exitCode(1)
	}
	ok, err := audit.FormatReport(e.stdout, rep)
	if err != nil {
		return err
	}
	if !ok {
		return exitCode(1)
	}
	return nil
}
