package bxctl

// grants check reads grant files itself, with the parser brokerd uses
// (package policy), so it needs no running daemon. Its body arrives with
// the policy issue.

type grantsCmd struct {
	Check grantsCheckCmd `cmd:"" help:"Check every grant file; print each problem as <file>:<line>: <problem>, or grants: ok."`
}

type grantsCheckCmd struct {
	Grants string `placeholder:"DIR" default:"/etc/boxmaker/grants" help:"The grants directory."`
}

func (c *grantsCheckCmd) Run(e *env) error {
	return notYet(e, "grants check", "the policy issue")
}
