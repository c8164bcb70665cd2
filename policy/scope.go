package policy

import "boxmaker/wire"

// Scope is the kind of session a call comes from (issue 17). Job is the
// scheduled job whose run the session is, as brokerd bound it when it
// started the run, never as loopd says; "" is an interactive session.
//
// A grant with job = "<name>" applies only in that job's sessions, and a
// job's session sees only the grants scoped to its job: every other grant,
// including every unscoped one, is invisible to it. So a job runs with
// exactly what the owner wrote for it, and a compromised or confused loopd
// that gets a session into a job's scope gains nothing an interactive
// session had, and the reverse. A grant out of scope never matches; when
// nothing matches, the reason is no_grant as for any other call.
//
// Ended marks a job's session whose run is over (or whose run brokerd no
// longer holds, after a restart): it sees no grant at all, so the session
// cannot be used once its run has ended. DenyAsks is the job file's
// unattended_ask = "deny": a call its grant would ask for is denied at once
// with unattended_denied, since nobody may be there to answer.
type Scope struct {
	Job      string
	Ended    bool
	DenyAsks bool
}

// sees reports whether g applies in scope s.
func (s Scope) sees(g wire.Grant) bool {
	if s.Ended {
		return false
	}
	if g.Job == nil {
		return s.Job == ""
	}
	return *g.Job == s.Job
}
