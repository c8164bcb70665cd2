// Package broker answers one tool request from loopd (M3a §5, "Write
// order"): decide; write and sync the Decision record; for ask, wait for the
// owner and write the Approval record; if allowed, run, update the session
// state, write the Result record; then answer. Nothing runs unless its
// records are on disk first, and no content reaches loopd unless the taint
// it raised is on disk.
package broker

import (
	"context"
	"time"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/roles/brokerd/internal/stages"
	"boxmaker/roles/brokerd/internal/state"
	"boxmaker/wire"
)

// Audit is what the broker needs of the audit log: Append returns once the
// record is synced, with its seq.
type Audit interface {
	Append(ev wire.AuditEvent) (uint64, error)
}

// States is what the broker needs of the session state store (package
// state): a per-session lock, and reading and writing a session's state.
type States interface {
	Lock(id wire.SessionID) (unlock func())
	Read(id wire.SessionID) (st policy.State, exists bool, err error)
	Write(id wire.SessionID, st policy.State) error
}

// Floor is what the broker needs of the taint floor (package state): every
// decision uses a session's taint raised to it, and every result raises it.
type Floor interface {
	Level() (wire.DataClass, error)
	Raise(c wire.DataClass) (wire.DataClass, error)
}

// Scopes gives a session's scope (jobrun.Runner). An error (a binding that
// cannot be read) denies the call: guessing "interactive" could hand a
// job's session every interactive grant.
type Scopes interface {
	Scope(id wire.SessionID) (policy.Scope, error)
}

// Client is the loopd connection a request came on.
type Client interface {
	// Pending sends the pending_approval frame (not final).
	Pending(p wire.PendingResponse) error
	// Gone is closed once the connection has closed.
	Gone() <-chan struct{}
}

// Unrecorded is the failure loopd gets when a result could not be recorded:
// the content is withheld.
const Unrecorded = "the result could not be recorded"

// Broker decides and answers tool requests. Its fields are set once, before
// the first Handle; Handle is safe for concurrent use.
type Broker struct {
	Grants    *policy.GrantsDir // read at every decision
	Audit     Audit
	States    States
	Floor     Floor
	Approvals *approvals.Table
	// Gateway, when not nil, is told of each call that becomes pending and
	// of how it ended (gatewayd, issue 14).
	Gateway Gateway
	Runtime runner.Runtime
	// Scopes says which job, if any, a session runs for (issue 17): the
	// bindings brokerd wrote when it started each job's run, never anything
	// loopd says. nil: every session is interactive.
	Scopes Scopes
	TTL    time.Duration // how long an approval waits
	Now    func() time.Time
	// Log prints lines for the owner, together (brokerd's stderr).
	Log func(lines ...string)

	grantsNote, auditNote, floorNote, secretNote onceNote
}

// Handle answers req. It returns the final response, or nil when loopd left
// while the call waited for approval (nothing is written then, and
// `bxctl audit verify` reports the decision as abandoned). ctx ends the
// wait for the owner, and is given to the runtime.
func (b *Broker) Handle(ctx context.Context, req wire.ToolRequest, c Client) wire.ToolResponse {
	unlock := b.States.Lock(req.Session)
	st, exists, damaged := b.readState(req.Session)
	scope, scopeDamaged := b.scope(req.Session)
	eff, damaged := b.effective(st, damaged || scopeDamaged)
	now := b.Now()
	d := b.Grants.DecideIn(scope, req, eff, wire.TimestampOf(now))
	b.noteGrants(d)
	b.noteSecret(req, d)
	seq, err := b.Audit.Append(decisionEvent(req, d, eff, damaged))
	if err != nil {
		unlock()
		return b.auditFailed(err)
	}
	stages.Mark(ctx, "decision")
	switch d.Outcome().(type) {
	case wire.OutcomeAllowed:
		defer unlock()
		return b.run(ctx, req, seq, d, st, exists)
	case wire.OutcomeAsk:
		// The lock is not held while the owner thinks: other calls of the
		// session go on, and the state is read again once approved.
		unlock()
		return b.ask(ctx, req, seq, d, now, c)
	default:
		unlock()
		return wire.DeniedResponse{Reason: d.Reason()}
	}
}

// ask holds the call in the pending table until it ends, records how, and
// runs it if the re-decision allows.
func (b *Broker) ask(ctx context.Context, req wire.ToolRequest, seq uint64, d policy.Decision, now time.Time, c Client) wire.ToolResponse {
	g, _ := d.Grant()
	expires := wire.TimestampOf(now.Add(b.TTL))
	if g.Expires != nil && *g.Expires < expires {
		expires = *g.Expires
	}
	info := wire.PendingApproval{Approval: seq, Session: req.Session, Call: req.Call,
		Tool: req.Tool, Arguments: req.Arguments, Grant: g.ID, Taint: d.State().Taint,
		Created: wire.TimestampOf(now), Expires: expires}
	answers := b.Approvals.Add(info)
	var a approvals.Answer
	ended := func(wire.ApprovalEnded) {}
	if err := c.Pending(wire.PendingResponse{Approval: seq, Expires: expires}); err == nil {
		ended = b.tellGateway(info)
	} else if b.Approvals.Drop(seq) {
		return nil // loopd is gone; gatewayd was never told
	}
	select {
	case a = <-answers:
	case <-c.Gone():
	case <-ctx.Done():
	}
	if a.Answer == 0 { // loopd left, or brokerd is stopping
		if b.Approvals.Drop(seq) {
			ended(wire.ApprovalEnded{Approval: seq, End: wire.EndAbandoned})
			return nil
		}
		// The owner or the expiry ended it first; its answer is waiting.
		a = <-answers
	}

	unlock := b.States.Lock(req.Session)
	defer unlock()
	var rd policy.Decision
	var rec wire.DecisionRecord
	var st policy.State
	var exists bool
	switch a.Answer {
	case wire.Approved:
		// A damaged state or floor gives the zero State: the re-decision
		// denies it.
		var damaged bool
		st, exists, damaged = b.readState(req.Session)
		// A job's run may have ended while the owner thought: the session
		// then sees no grant, and an approval must not run the call under
		// its job's grants after all. The scope must be what it was.
		scope, scopeDamaged := b.scope(req.Session)
		if scopeDamaged {
			rec = wire.OutcomeDenied{Reason: wire.StateUnreadable}
			break
		}
		if scope != d.Scope() {
			rec = wire.OutcomeDenied{Reason: wire.NoGrant}
			break
		}
		eff, _ := b.effective(st, damaged)
		// Redecide fails only for a decision that is not a fresh ask, which
		// d is; the zero Decision it returns then denies.
		rd, _ = b.Grants.Redecide(d, eff, wire.TimestampOf(b.Now()))
		b.noteGrants(rd)
		b.noteSecret(req, rd)
		rec = rd.Outcome()
	case wire.Refused:
		rec = wire.OutcomeDenied{Reason: wire.ApprovalRefused}
	default:
		rec = wire.OutcomeDenied{Reason: wire.ApprovalExpired}
	}
	ev := approvalEvent(req, seq, a, rec)
	if _, err := b.Audit.Append(ev); err != nil {
		resp := b.auditFailed(err)
		unrecorded := wire.OutcomeDenied{Reason: wire.AuditUnavailable}
		a.Reply(unrecorded)
		ended(endedOf(ev, unrecorded))
		return resp
	}
	a.Reply(rec)
	ended(endedOf(ev, rec))
	if r, denied := rec.(wire.OutcomeDenied); denied {
		return wire.DeniedResponse(r)
	}
	return b.run(ctx, req, seq, rd, st, exists)
}

// run runs an allowed decision (the session's lock held), raises the
// taint floor and the session's own state, records the result, and returns
// what loopd gets. st is the session's own state, below the floor.
func (b *Broker) run(ctx context.Context, req wire.ToolRequest, seq uint64, d policy.Decision, st policy.State, exists bool) wire.ToolResponse {
	res, err := runner.Run(ctx, d, b.Runtime)
	if err != nil {
		// Only a decision that cannot run gets here, and Handle passes
		// only those that can: a bug, reported as one, with nothing run.
		b.Log("brokerd: internal error: " + err.Error())
		return wire.FailedResponse{Message: "internal error in brokerd"}
	}
	// A failed run raises the taint too: the tool ran with the grant's
	// access, and its failure message may quote what it saw.
	after := state.Raise(st, res.Class, res.Untrusted)
	// The floor first: once the content reaches loopd, every session of
	// it may carry it, so no session may be decided below it from then on.
	floor, err := b.Floor.Raise(after.Taint)
	if err != nil {
		b.floorUnwritable(err)
		return wire.FailedResponse{Message: Unrecorded}
	}
	if !exists || after != st {
		if err := b.States.Write(req.Session, after); err != nil {
			b.stateUnwritable(req.Session, err)
			return wire.FailedResponse{Message: Unrecorded}
		}
	}
	stages.Mark(ctx, "state")
	if _, err := b.Audit.Append(resultEvent(req, seq, res, policy.State{Taint: max(after.Taint, floor), Untrusted: after.Untrusted})); err != nil {
		b.auditFailed(err)
		return wire.FailedResponse{Message: Unrecorded}
	}
	stages.Mark(ctx, "result")
	return res.Response
}

// effective is the state a session is decided in: its own, with the taint
// raised to the floor. A damaged state, or a floor that could not be read,
// gives the zero State, which policy denies (state_unreadable).
func (b *Broker) effective(st policy.State, damaged bool) (policy.State, bool) {
	if damaged {
		return policy.State{}, true
	}
	floor, err := b.Floor.Level()
	if err != nil {
		b.floorDamaged(err)
		return policy.State{}, true
	}
	return policy.State{Taint: max(st.Taint, floor), Untrusted: st.Untrusted}, false
}

// scope is the session's scope; a binding that cannot be read is reported,
// and damaged is set so that policy denies with state_unreadable.
func (b *Broker) scope(id wire.SessionID) (policy.Scope, bool) {
	if b.Scopes == nil {
		return policy.Scope{}, false
	}
	sc, err := b.Scopes.Scope(id)
	if err != nil {
		b.stateDamaged(id, err)
		return policy.Scope{}, true
	}
	return sc, false
}

// readState reads the session's state; a damaged file is reported, and
// the zero State it returns makes policy deny with state_unreadable.
func (b *Broker) readState(id wire.SessionID) (st policy.State, exists, damaged bool) {
	st, exists, err := b.States.Read(id)
	if err != nil {
		b.stateDamaged(id, err)
		return policy.State{}, exists, true
	}
	return st, exists, false
}
