package bxctl

import (
	"errors"
	"fmt"
	"slices"

	"boxmaker/policy"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// grants check asks the running brokerd to load its grants (check_grants on
// admin.sock), or, with --grants, reads a directory itself with the parser
// brokerd uses (package policy), needing no daemon. Either way it prints
// exactly what brokerd would refuse, in the same form: the loading
// problems and, for each grant whose secret cannot be read, why. Offline,
// secrets are checked only with --secrets, by policy's checker, the one
// brokerd's store uses; the rules are about the user reading (the owner of
// the directory and the files), so run it as brokerd's user.

type grantsCmd struct {
	Check grantsCheckCmd `cmd:"" help:"Check every grant file; print each problem as <file>:<line>: <problem>, or grants: ok."`
}

type grantsCheckCmd struct {
	Grants      string   `placeholder:"DIR" help:"Read this grants directory directly instead of asking brokerd."`
	Home        string   `placeholder:"PATH" help:"With --grants or --fix: BOXMAKER_HOME, which no grant may reach (default: brokerd.toml's with --fix, else $BOXMAKER_HOME, else /var/lib/boxmaker)."`
	Protect     []string `placeholder:"PATH" help:"With --grants or --fix: one more path no grant may reach, such as brokerd.toml or a socket directory kept elsewhere (repeatable)."`
	Secrets     string   `placeholder:"DIR" help:"With --grants: brokerd's secrets directory; check that every secret a grant names can be read there, as brokerd would (run as brokerd's user). Without it, secret names are checked but not their files."`
	AdminSocket string   `placeholder:"PATH" help:"brokerd's admin socket, asked when --grants is not given (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
	Fix         bool     `help:"As root: give the tools what each grant's path needs, as POSIX ACL entries on folders inside an owner's home, printing each change; refuse any other path with why (docs/running.md, \"Install on Debian\")."`
	DryRun      bool     `help:"With --fix: print what it would change, and change nothing."`
	Config      string   `placeholder:"PATH" help:"With --fix: brokerd.toml, for who the tools run as and its [paths] (default: /etc/boxmaker/brokerd.toml)."`
	Prefix      string   `default:"boxmaker-" help:"With --fix: the deployment's prefix, which names the tools, brokerd and owner users and groups."`
}

// Run prints "grants: ok", or every problem and the runbook pointer with
// exit status 1. A directory that cannot be read is its own message, on
// stderr, also with status 1: brokerd would deny every call then too.
func (c *grantsCheckCmd) Run(e *env) error {
	cmd := e.name + " grants check"
	if c.Fix {
		return c.runFix(e)
	}
	if c.DryRun || c.Config != "" {
		fmt.Fprintf(e.stderr, "%s: --dry-run and --config go with --fix\n", cmd)
		return exitCode(usageError)
	}
	var problems []wire.GrantProblem
	if c.Grants != "" {
		home := c.Home
		if home == "" {
			home = defaultHome()
		}
		// brokerd protects its secrets directory, wherever it is: so does
		// the offline check, or it would pass a grant brokerd refuses.
		extra := c.Protect
		if c.Secrets != "" {
			extra = append(slices.Clone(c.Protect), c.Secrets)
		}
		protected, err := offlineProtected(home, extra)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", cmd, err)
			return exitCode(1)
		}
		var check func(policy.SecretUse) error
		if c.Secrets != "" {
			// What brokerd's start refuses, this refuses: its error ends
			// with the runbook line.
			if _, err := policy.CheckSecretsDir(c.Secrets); err != nil {
				problem, see := err.Error(), runbook.See("secrets-dir-unsafe")
				var se *policy.SecretError
				if errors.As(err, &se) {
					problem, see = se.Problem, se.See
				}
				fmt.Fprintf(e.stderr, "%s: %s\n%s\n", cmd, wire.Printable(problem), see)
				return exitCode(1)
			}
			dir := c.Secrets
			check = func(use policy.SecretUse) error { return policy.CheckSecretUse(dir, use) }
		}
		ps, err := policy.CheckGrants(c.Grants, protected, check)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %s: %v\n%s\n", cmd, c.Grants, err, runbook.See("grants-invalid"))
			return exitCode(1)
		}
		problems = ps
	} else {
		if c.Secrets != "" {
			fmt.Fprintf(e.stderr, "%s: --secrets goes with --grants; without it brokerd checks its own secrets directory\n", cmd)
			return exitCode(usageError)
		}
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
	// A secret that cannot be read leaves the grants valid (only calls
	// under its grant are denied) and its line carries its own runbook
	// pointer; any other problem invalidates the whole set.
	invalid := false
	for _, p := range problems {
		fmt.Fprintln(e.stdout, policy.FormatProblem(p))
		invalid = invalid || !policy.IsSecretProblem(p)
	}
	if invalid {
		fmt.Fprintln(e.stdout, runbook.See("grants-invalid"))
	}
	return exitCode(1)
}
