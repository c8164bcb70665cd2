package bxctl

// audit verify reads <home>/audit/ itself with the chain verifier brokerd
// uses (package audit), so it needs no running daemon. Its body arrives
// with the audit issue.

type auditCmd struct {
	Verify auditVerifyCmd `cmd:"" help:"Verify the whole audit chain; print audit: ok, or the first failure as <file>:<line>: <what>."`
}

type auditVerifyCmd struct {
	Home string `placeholder:"PATH" help:"BOXMAKER_HOME to read (default: $BOXMAKER_HOME, else /var/lib/boxmaker)."`
}

func (c *auditVerifyCmd) Run(e *env) error {
	return notYet(e, "audit verify", "the audit issue")
}
