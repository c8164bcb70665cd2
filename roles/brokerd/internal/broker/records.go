package broker

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// decisionEvent is the Decision record of d: the outcome, the matched grant
// and its file's hash, and the session's state when decided. A damaged
// state is recorded as the strictest one, secret and untrusted: what the
// session may have been, never less.
func decisionEvent(req wire.ToolRequest, d policy.Decision, st policy.State, damaged bool) wire.DecisionEvent {
	ev := wire.DecisionEvent{Session: req.Session, Call: req.Call, Tool: req.Tool, Arguments: req.Arguments,
		Outcome: d.Outcome(), Taint: st.Taint, Untrusted: st.Untrusted}
	if damaged {
		ev.Taint, ev.Untrusted = wire.Secret, true
	}
	if g, ok := d.Grant(); ok {
		id, sha := g.ID, g.Sha256
		ev.Grant, ev.GrantSha256 = &id, &sha
	}
	return ev
}

// resultEvent records a run by the hash and size of what it produced (the
// content, or the failure message), never the content itself: a read_file
// of a secret must not copy the secret into the log.
func resultEvent(req wire.ToolRequest, seq uint64, res runner.Result, after policy.State) wire.ResultEvent {
	ev := wire.ResultEvent{Session: req.Session, Call: req.Call, Decision: seq, Status: res.Status,
		Class: res.Class, Untrusted: res.Untrusted, TaintAfter: after.Taint}
	var body string
	switch r := res.Response.(type) {
	case wire.ResultResponse:
		body, ev.Truncated = r.Content, r.Truncated
	case wire.FailedResponse:
		body = r.Message
	}
	ev.Bytes, ev.Sha256 = uint64(len(body)), wire.Sha256([]byte(body))
	return ev
}

// onceNote remembers the last thing printed about a condition, so that a
// condition that holds for every call (invalid grants, a failed audit log)
// is printed once per distinct cause, not once per call.
type onceNote struct {
	mu   sync.Mutex
	last string
}

// first reports whether key differs from the last key noted, and notes it.
func (n *onceNote) first(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if key == n.last {
		return false
	}
	n.last = key
	return true
}

// noteGrants prints the problems behind a grants_invalid decision, once per
// distinct set; a valid set forgets them, so that the same problems coming
// back are printed again.
func (b *Broker) noteGrants(d policy.Decision) {
	if d.Reason() != wire.GrantsInvalid {
		b.grantsNote.first("")
		return
	}
	ps := d.Problems()
	lines := make([]string, 0, len(ps)+2)
	lines = append(lines, "brokerd: the grant files are invalid; every tool call is denied:")
	for _, p := range ps {
		lines = append(lines, policy.FormatProblem(p))
	}
	if !b.grantsNote.first(strings.Join(lines[1:], "\n")) {
		return
	}
	b.Log(append(lines, runbook.See("grants-invalid"))...)
}

// noteSecret prints why a call was denied secret_unavailable: the session,
// the call, the grant, and the secret check's error, which names the
// secret and the problem (never the value) and ends with its runbook line.
// The same cause again in a row is printed once: a model retrying a call
// adds nothing the owner needs.
func (b *Broker) noteSecret(req wire.ToolRequest, d policy.Decision) {
	err := d.SecretError()
	if d.Reason() != wire.SecretUnavailable || err == nil {
		b.secretNote.first("")
		return
	}
	g, _ := d.Grant()
	if !b.secretNote.first(g.ID + "\x00" + err.Error()) {
		return
	}
	why, see := err.Error(), runbook.See("secret-unavailable")
	var se *policy.SecretError
	if errors.As(err, &se) {
		why, see = se.Problem, se.See
	}
	b.Log(fmt.Sprintf("brokerd: session %s call %d: grant %s needs secret %q, which cannot be read; the call is denied (secret_unavailable): %s",
		req.Session, req.Call, wire.Printable(g.ID), wire.Printable(g.Secret), wire.Printable(why)), see)
}

// auditFailed reports a failed audit write and returns the answer for a
// call whose record could not be written.
func (b *Broker) auditFailed(err error) wire.ToolResponse {
	if b.auditNote.first(err.Error()) {
		b.Log("brokerd: the audit log cannot be written; tool calls are denied: "+err.Error(), runbook.See("audit-unavailable"))
	}
	return wire.DeniedResponse{Reason: wire.AuditUnavailable}
}

func (b *Broker) stateDamaged(id wire.SessionID, err error) {
	b.Log("brokerd: session "+id.String()+": the broker state cannot be read; its calls are denied: "+err.Error(),
		runbook.See("broker-state-damaged"))
}

// floorDamaged reports, once per distinct error, a taint floor that could
// not be read when brokerd started: every call is denied until it is fixed.
func (b *Broker) floorDamaged(err error) {
	if b.floorNote.first(err.Error()) {
		b.Log("brokerd: the taint floor cannot be read; every tool call is denied: "+err.Error(), runbook.See("broker-floor-damaged"))
	}
}

func (b *Broker) floorUnwritable(err error) {
	b.Log("brokerd: the raised taint floor could not be written; the result is withheld: "+err.Error(),
		runbook.See("broker-state-unwritable"))
}

func (b *Broker) stateUnwritable(id wire.SessionID, err error) {
	b.Log("brokerd: session "+id.String()+": the raised taint could not be written; the result is withheld: "+err.Error(),
		runbook.See("broker-state-unwritable"))
}
