package policy

import (
	"errors"
	"slices"
	"sync/atomic"

	"boxmaker/wire"
)

// Decision is the outcome of one policy decision, and the only thing that
// can authorise a tool run. Code outside this package cannot build a usable
// one: its one field is unexported, so the only Decision it can write is the
// zero value, which denies. A Decision authorises at most one run: Claim
// succeeds once, and copies share that state because they share the pointer.
type Decision struct{ d *decision }

type decision struct {
	req      wire.ToolRequest
	state    State
	scope    Scope
	outcome  wire.DecisionRecord
	argsErr  error
	problems []wire.GrantProblem
	// secretErr is why the matched grant's secret cannot be read, for a
	// secret_unavailable denial.
	secretErr error
	args      Args
	m         *match // the matched grant; nil for a denial without one
	// approved marks a re-decision made after the owner approved: ask and
	// auto may then run.
	approved bool
	// claimed is set by the one successful Claim, or, on an ask decision, by
	// the one Redecide it allows.
	claimed atomic.Bool
}

// State is what policy needs of a session: its taint, and whether it has
// seen untrusted content (recorded, not yet an input to matching).
type State struct {
	Taint     wire.DataClass
	Untrusted bool
}

// GrantInfo describes the grant a decision matched, for the audit record and
// the approval listing. It is a copy: changing it changes nothing.
type GrantInfo struct {
	ID          string
	Sha256      wire.Hash32 // of the grant file's bytes as read
	Mode        wire.Mode
	ResultClass wire.DataClass
	Untrusted   bool
	Expires     *wire.Timestamp
	Secret      string // the name of the grant's secret, "" when it names none
}

// Errors from Claim and Redecide.
var (
	ErrZeroDecision     = errors.New("policy: not a decision made by policy")
	ErrDenied           = errors.New("policy: the decision is a denial")
	ErrAwaitingApproval = errors.New("policy: the decision is ask and has not been approved")
	ErrAlreadyClaimed   = errors.New("policy: the decision has already been used")
	ErrNotPending       = errors.New("policy: only an ask decision from Decide can be re-decided")
)

// zeroOutcome is what a Decision that policy did not make says.
var zeroOutcome = wire.OutcomeDenied{Reason: wire.NoGrant}

// Outcome is the plain record of the decision. The zero Decision is denied.
func (d Decision) Outcome() wire.DecisionRecord {
	if d.d == nil {
		return zeroOutcome
	}
	return d.d.outcome
}

// Reason is the denial reason, or 0 when the outcome is not a denial.
func (d Decision) Reason() wire.DenyReason {
	if r, ok := d.Outcome().(wire.OutcomeDenied); ok {
		return r.Reason
	}
	return 0
}

// Request is the tool request decided; zero for the zero Decision.
func (d Decision) Request() wire.ToolRequest {
	if d.d == nil {
		return wire.ToolRequest{}
	}
	return d.d.req
}

// State is the session state the decision was made under.
func (d Decision) State() State {
	if d.d == nil {
		return State{}
	}
	return d.d.state
}

// Scope is the scope the decision was made in; Scope{} (interactive) for
// the zero Decision.
func (d Decision) Scope() Scope {
	if d.d == nil {
		return Scope{}
	}
	return d.d.scope
}

// Args are the parsed arguments, or nil when they were not parsed (a denial
// before parsing, or invalid_arguments).
func (d Decision) Args() Args {
	if d.d == nil {
		return nil
	}
	return d.d.args
}

// ArgsError says why the arguments were invalid, for the logs; nil unless the
// reason is invalid_arguments.
func (d Decision) ArgsError() error {
	if d.d == nil {
		return nil
	}
	return d.d.argsErr
}

// Problems are the grant problems behind a grants_invalid denial, sorted by
// file and line, for brokerd to print; nil otherwise.
func (d Decision) Problems() []wire.GrantProblem {
	if d.d == nil {
		return nil
	}
	// The problems may be shared with other calls that shared a read of
	// the grants: copy the line numbers too, not only the slice.
	ps := slices.Clone(d.d.problems)
	for i, p := range ps {
		if p.Line != nil {
			line := *p.Line
			ps[i].Line = &line
		}
	}
	return ps
}

// SecretError says why the matched grant's secret cannot be read (the
// secret check's error: it names the secret and the problem, never the
// value), for brokerd to print; nil unless the reason is
// secret_unavailable.
func (d Decision) SecretError() error {
	if d.d == nil {
		return nil
	}
	return d.d.secretErr
}

// Grant describes the matched grant: for allowed, ask, denied_by_grant and
// secret_unavailable.
func (d Decision) Grant() (GrantInfo, bool) {
	if d.d == nil || d.d.m == nil {
		return GrantInfo{}, false
	}
	g := d.d.m.g
	info := GrantInfo{ID: g.id, Sha256: g.sha, Mode: g.g.Mode, ResultClass: g.g.ResultClass, Untrusted: g.g.Untrusted}
	if g.g.Secret != nil {
		info.Secret = *g.g.Secret
	}
	if g.g.Expires != nil {
		e := *g.g.Expires
		info.Expires = &e
	}
	return info, true
}

// Claim returns what a run needs, exactly once, for a decision that may run:
// allowed by Decide, or ask or allowed by Redecide after an approval. Every
// other Decision, and every second Claim of the same one or of any copy,
// gets an error and a zero Allowed.
func (d Decision) Claim() (Allowed, error) {
	if d.d == nil {
		return Allowed{}, ErrZeroDecision
	}
	switch d.d.outcome.(type) {
	case wire.OutcomeAllowed:
	case wire.OutcomeAsk:
		if !d.d.approved {
			return Allowed{}, ErrAwaitingApproval
		}
	default:
		return Allowed{}, ErrDenied
	}
	if !d.d.claimed.CompareAndSwap(false, true) {
		return Allowed{}, ErrAlreadyClaimed
	}
	return newAllowed(d.d), nil
}
