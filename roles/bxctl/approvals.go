package bxctl

import (
	"fmt"
	"io"
	"strings"

	"boxmaker/wire"
)

// The approval commands talk to brokerd over admin.sock (M3a §6, §9).

type approvalsCmd struct {
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// Run lists the pending approvals, oldest first, two lines each.
func (c *approvalsCmd) Run(e *env) error {
	const cmd = "approvals"
	msg, err := ask(e, e.name+" "+cmd, adminSocket(c.AdminSocket), wire.Approvals{})
	if err != nil {
		return err
	}
	list, ok := msg.(wire.ApprovalList)
	if !ok {
		return unexpected(e, e.name+" "+cmd, msg)
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(e.stdout, "no pending approvals")
		return nil
	}
	var b strings.Builder
	now := e.now()
	for _, p := range list.Items {
		b.WriteString(approvalBlock(p, now))
	}
	_, err = io.WriteString(e.stdout, b.String())
	return err
}

type approveCmd struct {
	ID          uint64 `arg:"" name:"id" help:"The approval's number, as listed by approvals."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// Run approves; brokerd decides the call again with the grants and taint as
// they are now, and says whether it runs.
func (c *approveCmd) Run(e *env) error {
	cmd := e.name + " approve"
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.Approve{Approval: c.ID})
	if err != nil {
		return err
	}
	switch m := msg.(type) {
	case wire.ApproveResult:
		if d, denied := m.Outcome.(wire.OutcomeDenied); denied {
			fmt.Fprintf(e.stdout, "approved %d: denied (%s)\n", c.ID, d.Reason)
		} else {
			fmt.Fprintf(e.stdout, "approved %d: runs\n", c.ID)
		}
		return nil
	case wire.WireError:
		return noSuchApproval(e, cmd, c.ID)
	}
	return unexpected(e, cmd, msg)
}

type refuseCmd struct {
	ID          uint64 `arg:"" name:"id" help:"The approval's number, as listed by approvals."`
	Reason      string `placeholder:"TEXT" help:"Why, for the audit log."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// Run refuses; the call is denied with approval_refused.
func (c *refuseCmd) Run(e *env) error {
	cmd := e.name + " refuse"
	req := wire.Refuse{Approval: c.ID}
	if c.Reason != "" {
		req.Reason = &c.Reason
	}
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), req)
	if err != nil {
		return err
	}
	switch msg.(type) {
	case wire.OK:
		fmt.Fprintf(e.stdout, "refused %d\n", c.ID)
		return nil
	case wire.WireError:
		return noSuchApproval(e, cmd, c.ID)
	}
	return unexpected(e, cmd, msg)
}

// noSuchApproval: ask passes on only this error.
func noSuchApproval(e *env, cmd string, id uint64) error {
	fmt.Fprintf(e.stderr, "%s: no pending approval %d (it was answered, expired, or its call went away; see %s approvals)\n", cmd, id, e.name)
	return exitCode(1)
}
