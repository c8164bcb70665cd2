package bxctl

import (
	"fmt"

	"boxmaker/policy"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// grants check asks the running brokerd to load its grants (check_grants on
// admin.sock), or, with --grants, reads a directory itself with the parser
// brokerd uses (package policy), needing no daemon. Either way it prints
// exactly what brokerd would refuse, in the same form.

type grantsCmd struct {
	Check grantsCheckCmd `cmd:"" help:"Check every grant file; print each problem as <file>:<line>: <problem>, or grants: ok."`
}

type grantsCheckCmd struct {
	Grants      string   `placeholder:"DIR" help:"Read this grants directory directly instead of asking brokerd."`
	Home        string   `placeholder:"PATH" help:"With --grants: BOXMAKER_HOME, which no grant may reach (default: $BOXMAKER_HOME, else /var/lib/boxmaker)."`
	Protect     []string `placeholder:"PATH" help:"With --grants: one more path no grant may reach, such as brokerd.toml or a socket directory kept elsewhere (repeatable)."`
	AdminSocket string   `placeholder:"PATH" help:"brokerd's admin socket, asked when --grants is not given (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// Run prints "grants: ok", or every problem and the runbook pointer with
// exit status 1. A directory that cannot be read is its own message, on
// stderr, also with status 1: brokerd would deny every call then too.
func (c *grantsCheckCmd) Run(e *env) error {
	cmd := e.name + " grants check"
	var problems []wire.GrantProblem
	if c.Grants != "" {
		home := c.Home
		if home == "" {
			home = defaultHome()
		}
		protected, err := offlineProtected(home, c.Protect)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", cmd, err)
			return exitCode(1)
		}
		_, ps, err := policy.LoadGrants(c.Grants, protected)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %s: %v\n%s\n", cmd, c.Grants, err, runbook.See("grants-invalid"))
			return exitCode(1)
		}
		problems = ps
	} else {
		msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.CheckGrants{})
		if err != nil {
			return err
		}
		rep, ok := msg.(wire.GrantsReport)
		if !ok {
			return unexpected(e, cmd, msg)
		}
		problems = rep.Problems
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
