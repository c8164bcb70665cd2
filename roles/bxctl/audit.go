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
// know (recoveries, accepted breaks and heads, abandoned approvals, clock
// warnings), or the first failure and the runbook pointer with exit status
// 1. Where brokerd keeps a head (<home>/broker/audit-head), the log must
// hold the record it names, as at brokerd's startup; if not, that is printed
// with its runbook pointer, with status 1. A log that cannot be read is its
// own message, on stderr, also with status 1.
func (c *auditVerifyCmd) Run(e *env) error {
	home := c.Home
	if home == "" {
		home = defaultHome()
	}
	headFile := filepath.Join(home, "broker", "audit-head")
	rep, herr, err := audit.VerifyDirHead(filepath.Join(home, "audit"), headFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s audit verify: %v\n", e.name, err)
		return exitCode(1)
	}
	ok, err := audit.FormatReport(e.stdout, rep)
	if err != nil {
		return err
	}
	if herr != nil {
		// The same words brokerd's startup would refuse with.
		if _, err := fmt.Fprintln(e.stdout, herr); err != nil {
			return err
		}
		return exitCode(1)
	}
	if !ok {
		return exitCode(1)
	}
	if h, err := audit.ReadHead(headFile); err == nil && h.Next > 0 {
		_, err = fmt.Fprintf(e.stdout, "head: the log holds record %d, which %s names\n", h.Next-1, headFile)
		return err
	}
	return nil
}
