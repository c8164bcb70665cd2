package bxctl

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// The approval commands talk to brokerd over admin.sock (M3a §6, §9).

type approvalsCmd struct {
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// Run lists the pending approvals, oldest first, two lines each, as each
// frame of the list arrives.
func (c *approvalsCmd) Run(e *env) error {
	cmd := e.name + " approvals"
	now, listed := e.now(), false
	ferr := fetchApprovals(adminSocket(c.AdminSocket), func(items []wire.PendingApproval) {
		var b strings.Builder
		for _, p := range items {
			b.WriteString(approvalBlock(p, now))
			listed = true
		}
		// Rows broken here, at the terminal's width, so that the
		// terminal's own wrap cannot start a row with argument text.
		_, _ = io.WriteString(e.stdout, rows(b.String(), termWidth(e.stdout)))
	})
	if ferr != nil {
		fmt.Fprintf(e.stderr, "%s: %s\n", cmd, ferr.what)
		if ferr.see != "" {
			fmt.Fprintln(e.stderr, ferr.see)
		}
		return exitCode(1)
	}
	if !listed {
		fmt.Fprintln(e.stdout, "no pending approvals")
	}
	return nil
}

// maxPages bounds the frames of one approvals answer a client reads.
const maxPages = 4096

// fetchError is why the pending approvals could not all be read: what, for
// the owner, and the runbook line if there is one.
type fetchError struct{ what, see string }

// fetchApprovals asks brokerd at path for the pending approvals and calls
// page with each approval_list frame's items. The list may come in several
// frames, every one but the last not final (issue 12); an error frame, after
// some of them or alone, means the list is not whole.
func fetchApprovals(path string, page func([]wire.PendingApproval)) *fetchError {
	unreachable := func(err error) *fetchError {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("timed out: %w", err)
		}
		return &fetchError{fmt.Sprintf("cannot reach brokerd at %s: %s", wire.Printable(path), wire.Printable(err.Error())), runbook.See("admin-unavailable")}
	}
	conn, err := net.DialTimeout("unix", path, dialTimeout)
	if err != nil {
		return unreachable(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(answerTimeout))
	if err := wire.WriteEnvelope(conn, wire.Request(1, wire.Approvals{})); err != nil {
		return unreachable(err)
	}
	for n := 0; ; n++ {
		env, err := wire.ReadEnvelope(conn)
		if err != nil {
			return unreachable(fmt.Errorf("no answer: %w", err))
		}
		if env.ID != 1 || n == maxPages {
			return &fetchError{fmt.Sprintf("brokerd answered out of turn (frame %d, final %v)", env.ID, env.Final), ""}
		}
		switch m := env.Msg.(type) {
		case wire.ApprovalList:
			page(m.Items)
			if env.Final {
				return nil
			}
			continue
		case wire.WireError:
			if n == 0 {
				return &fetchError{fmt.Sprintf("brokerd refused the request: %s: %s", m.Code, wire.Printable(m.Detail)), ""}
			}
			return &fetchError{fmt.Sprintf("brokerd could not list every pending approval: %s: %s", m.Code, wire.Printable(m.Detail)), runbook.See("approvals-incomplete")}
		}
		return &fetchError{fmt.Sprintf("brokerd answered with %s", env.Msg.Kind()), ""}
	}
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
			if d.Reason == wire.SecretUnavailable {
				// The secret went between the ask and the answer; brokerd's
				// log names it and says why.
				fmt.Fprintf(e.stdout, "the grant's secret cannot be read now; brokerd's log says which and why\n%s\n", runbook.See("secret-unavailable"))
			}
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
