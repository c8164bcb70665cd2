package tools

import "boxmaker/wire"

// DenialText is what the model reads when policy denies a call: M3a §8,
// word for word. loopd writes these, so their class is public and they are
// not untrusted.
func DenialText(r wire.DenyReason) string {
	switch r {
	case wire.NoGrant:
		return "Denied: no grant allows this call."
	case wire.GrantExpired:
		return "Denied: the grant for this call has expired."
	case wire.TaintTooHigh:
		return "Denied: this session has seen data too sensitive for this call."
	case wire.DeniedByGrant:
		return "Denied: a grant forbids this call."
	case wire.ApprovalRefused:
		return "Denied: the owner refused this call."
	case wire.ApprovalExpired:
		return "Denied: the approval request expired without an answer."
	case wire.InvalidArguments:
		return "Denied: the arguments are not valid for this tool."
	case wire.GrantsInvalid:
		return "Denied: the grant files have an error; the owner has been told."
	case wire.AuditUnavailable:
		return "Denied: the audit log cannot be written; the owner has been told."
	case wire.StateUnreadable:
		return "Denied: this session's broker state is damaged; the owner has been told."
	case wire.SecretUnavailable:
		// Not in M3a §8 (issue 15 adds the reason). The model learns
		// nothing about the secret, not even its name.
		return "Denied: a secret this call needs is not available; the owner has been told."
	case wire.UnattendedDenied:
		// Not in M3a §8 (issue 17 adds the reason): an ask grant matched
		// in a scheduled job whose file says unattended_ask = "deny".
		return "Denied: this call needs the owner's approval, and this scheduled job's file says to deny such calls rather than ask."
	}
	return "Denied: " + r.String() + "."
}
