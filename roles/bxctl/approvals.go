package bxctl

// The approval commands talk to brokerd over admin.sock (M3a §6, §9).

type approvalsCmd struct {
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

func (c *approvalsCmd) Run(e *env) error {
	return notYet(e, "approvals", "the brokerd issue (the admin socket)")
}

type approveCmd struct {
	ID          uint64 `arg:"" name:"id" help:"The approval's number, as listed by approvals."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

func (c *approveCmd) Run(e *env) error {
	return notYet(e, "approve", "the brokerd issue (the admin socket)")
}

type refuseCmd struct {
	ID          uint64 `arg:"" name:"id" help:"The approval's number, as listed by approvals."`
	Reason      string `placeholder:"TEXT" help:"Why, for the audit log."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

func (c *refuseCmd) Run(e *env) error {
	return notYet(e, "refuse", "the brokerd issue (the admin socket)")
}
