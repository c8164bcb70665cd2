// Package admin answers one request on admin.sock (M3a §6): the owner's
// list of pending approvals, approve, refuse, and a check of the grant
// files. It never decides a call itself: approve and refuse end the pending
// entry, and the waiting call re-decides and records, then tells admin the
// outcome it recorded.
package admin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/wire"
)

// Admin answers admin requests. Its fields are set once, before the first
// Handle; Handle is safe for concurrent use.
type Admin struct {
	Grants    *policy.GrantsDir // the one decisions read, protected paths and all
	Approvals *approvals.Table
	Now       func() time.Time
	// Notes, Jobs and Audit serve the notes and jobs requests (issue 17);
	// without them those requests are answered with an error.
	Notes *notes.Store
	Jobs  Jobs
	Audit Auditor
	// Health answers bxctl doctor's health request (issue 27); without it
	// the request is answered with an error.
	Health func(ctx context.Context) wire.HealthReport

	// noteMu makes a promotion or deletion one step: the look at the note
	// and the change, with its audit record between.
	noteMu sync.Mutex
}

// Handle answers msg, which must be one of the admin kinds. The answer is
// final; a WireError closes the connection like any other answer.
func (a *Admin) Handle(ctx context.Context, msg wire.Message) wire.Message {
	switch m := msg.(type) {
	case wire.Approvals:
		return wire.ApprovalList{Items: a.Approvals.List()}
	case wire.Approve:
		out, err := a.Approvals.Approve(m.Approval, approvals.Bxctl, a.Now())
		return wait(ctx, m.Approval, out, err, func(rec wire.DecisionRecord) wire.Message {
			return wire.ApproveResult{Outcome: rec}
		})
	case wire.Refuse:
		out, err := a.Approvals.Refuse(m.Approval, approvals.Bxctl, m.Reason, a.Now())
		return wait(ctx, m.Approval, out, err, func(wire.DecisionRecord) wire.Message { return wire.OK{} })
	case wire.CheckGrants:
		return wire.GrantsReport{Problems: CheckGrants(a.Grants)}
	case wire.Health:
		if a.Health == nil {
			return unavailable("the health report")
		}
		return a.Health(ctx)
	}
	if answer, ok := a.handleMemJobs(ctx, msg); ok {
		return answer
	}
	return wire.WireError{Code: wire.Forbidden, Detail: fmt.Sprintf("admin.sock does not accept %s", msg.Kind())}
}

// Answer is every frame of the answer to msg, the last one final: approvals
// in as many frames as its list needs (Pages), anything else in one.
func (a *Admin) Answer(ctx context.Context, id uint64, msg wire.Message) []wire.Envelope {
	if _, ok := msg.(wire.Approvals); ok {
		return Pages(id, a.Approvals.List())
	}
	return []wire.Envelope{wire.Reply(id, true, a.Handle(ctx, msg))}
}

// wait answers once the call has recorded its Approval record, so that
// "approved" or "refused" means the record is on disk.
func wait(ctx context.Context, id uint64, out <-chan wire.DecisionRecord, err error, answer func(wire.DecisionRecord) wire.Message) wire.Message {
	if errors.Is(err, approvals.ErrNoSuchApproval) {
		return wire.WireError{Code: wire.NoSuchApproval, Detail: fmt.Sprintf("no pending approval %d", id)}
	}
	select {
	case rec := <-out:
		return answer(rec)
	case <-ctx.Done():
		return wire.WireError{Code: wire.Internal, Detail: "brokerd is stopping"}
	}
}

// CheckGrants loads the grants as a decision would, through the same
// GrantsDir, and adds a problem for every grant whose secret the
// GrantsDir's secret check (brokerd's secrets store) refuses now
// (GrantsDir.Check). A directory that cannot be read is reported as Decide
// reports it, as a problem of ".".
func CheckGrants(g *policy.GrantsDir) []wire.GrantProblem {
	problems, err := g.Check()
	if err != nil {
		return []wire.GrantProblem{{File: ".", Problem: err.Error()}}
	}
	if problems == nil {
		problems = []wire.GrantProblem{}
	}
	return problems
}
