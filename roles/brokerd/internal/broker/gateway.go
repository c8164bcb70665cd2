package broker

import (
	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/wire"
)

// Gateway is told of every call that becomes pending and of how it ended,
// so that gatewayd can post it on Mattermost and then show the outcome
// (issue 14). It can neither answer the call nor hold it up: Pending and
// the function it returns must return at once, and an owner's answer comes
// back only through the Approvals table, like bxctl's.
type Gateway interface {
	Pending(p wire.PendingApproval) (ended func(wire.ApprovalEnded))
}

// tellGateway tells the gateway, if there is one, that info is pending, and
// returns what to call once it has ended.
func (b *Broker) tellGateway(info wire.PendingApproval) func(wire.ApprovalEnded) {
	if b.Gateway == nil {
		return func(wire.ApprovalEnded) {}
	}
	return b.Gateway.Pending(info)
}

// approvalEvent is the Approval record of answer a to the call decided in
// record seq, with the outcome rec: who answered (the owner's Mattermost
// user id and the post, or bxctl with no post) unless it expired, and the
// reason of a refusal.
func approvalEvent(req wire.ToolRequest, seq uint64, a approvals.Answer, rec wire.DecisionRecord) wire.ApprovalEvent {
	ev := wire.ApprovalEvent{Session: req.Session, Call: req.Call, Decision: seq, Answer: a.Answer, Outcome: rec}
	if a.Answer != wire.Expired {
		ev.By = copyOf(&a.Who.By)
		ev.Post = copyOf(a.Who.Post)
	}
	if a.Answer == wire.Refused {
		ev.Reason = copyOf(a.Reason)
	}
	return ev
}

// endedOf is what gatewayd is told once ev is recorded (or failed to be,
// outcome then being audit_unavailable): the answer, who gave it, and why
// the call does not run, when it does not.
func endedOf(ev wire.ApprovalEvent, outcome wire.DecisionRecord) wire.ApprovalEnded {
	e := wire.ApprovalEnded{Approval: ev.Decision, By: copyOf(ev.By), Post: copyOf(ev.Post), Reason: copyOf(ev.Reason)}
	switch ev.Answer {
	case wire.Approved:
		e.End = wire.EndApproved
	case wire.Refused:
		e.End = wire.EndRefused
	default:
		e.End = wire.EndExpired
	}
	if d, ok := outcome.(wire.OutcomeDenied); ok {
		r := d.Reason
		e.Denied = &r
	}
	return e
}

// copyOf is a copy of *p (nil for nil): records and messages share no
// memory with what the answer's sender still holds.
func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
