package policy

import "boxmaker/wire"

// RunbookGrantsInvalid ends every message about invalid grants. policy cannot
// import the runbook package, so the anchor is written out here; the gate's
// runbook test finds it like any other.
const RunbookGrantsInvalid = "see docs/runbook.md#grants-invalid"

// Decide reads the grants in grantsDir and decides req for a session in
// state st at time now. The checks run in this order, the first that fails
// deciding: the grant set is valid (grants_invalid), the state is valid
// (state_unreadable), the tool is known (no_grant: no grant can name another
// tool), the arguments parse and pass the form checks (invalid_arguments),
// then matching, then, for an auto or ask grant that names a secret, the
// secret check (secret_unavailable; none here: see GrantsDir.SetSecretCheck).
// Only the grants directory itself is protected (rule 9); brokerd decides
// through a GrantsDir given its full protected set and its secrets.
func Decide(grantsDir string, req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	return NewGrantsDir(grantsDir, nil).Decide(req, st, now)
}

// decideSet decides against a set already loaded; set is nil when invalid.
// secretCheck says whether a secret can be read now; nil checks nothing.
func decideSet(set *GrantSet, problems []wire.GrantProblem, secretCheck func(SecretUse) error, scope Scope, req wire.ToolRequest, st State, now wire.Timestamp) Decision {
	d := &decision{req: req, state: st, scope: scope}
	deny := func(r wire.DenyReason) Decision {
		d.outcome = wire.OutcomeDenied{Reason: r}
		return Decision{d}
	}
	if set == nil {
		d.problems = problems
		return deny(wire.GrantsInvalid)
	}
	// A zero or unknown taint would compare below every max_taint; refuse it
	// rather than guess.
	if !st.Taint.Valid() {
		return deny(wire.StateUnreadable)
	}
	tool, ok := ParseTool(req.Tool)
	if !ok {
		return deny(wire.NoGrant)
	}
	args, err := ParseArgs(tool, req.Arguments)
	if err != nil {
		d.argsErr = err
		return deny(wire.InvalidArguments)
	}
	d.args = args
	m, reason := matchGrants(set, scope, args, st.Taint, now)
	if m == nil {
		return deny(reason)
	}
	d.m = m
	if use := secretUse(m.g.g); use != nil && m.g.g.Mode != wire.Deny && secretCheck != nil {
		// Before ask as well as auto: the owner must not be asked to
		// approve a call that cannot run. A Redecide checks again.
		if err := secretCheck(*use); err != nil {
			d.secretErr = err
			return deny(wire.SecretUnavailable)
		}
	}
	switch m.g.g.Mode {
	case wire.Auto:
		d.outcome = wire.OutcomeAllowed{}
	case wire.Ask:
		if scope.DenyAsks {
			return deny(wire.UnattendedDenied)
		}
		d.outcome = wire.OutcomeAsk{}
	default:
		d.outcome = wire.OutcomeDenied{Reason: wire.DeniedByGrant}
	}
	return Decision{d}
}

// Redecide decides prev's request again, with the grants and state as they
// are now and in prev's scope, after the owner approved it (M3a §6). An ask or auto outcome may
// run, under the grant matched now; any denial denies. prev must be an ask
// decision from Decide, and each can be re-decided once: a second Redecide,
// or one of anything else, returns an error and the zero Decision.
func Redecide(grantsDir string, prev Decision, st State, now wire.Timestamp) (Decision, error) {
	return NewGrantsDir(grantsDir, nil).Redecide(prev, st, now)
}

// Redecide is the package's Redecide, reading the grants from g.
func (g *GrantsDir) Redecide(prev Decision, st State, now wire.Timestamp) (Decision, error) {
	p := prev.d
	if p == nil {
		return Decision{}, ErrZeroDecision
	}
	if _, ask := p.outcome.(wire.OutcomeAsk); !ask || p.approved {
		return Decision{}, ErrNotPending
	}
	if !p.claimed.CompareAndSwap(false, true) {
		return Decision{}, ErrAlreadyClaimed
	}
	d := g.DecideIn(p.scope, p.req, st, now)
	switch d.d.outcome.(type) {
	case wire.OutcomeAsk, wire.OutcomeAllowed:
		d.d.approved = true
	}
	return d, nil
}
