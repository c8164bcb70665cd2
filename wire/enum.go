package wire

import "fmt"

// enumNames maps an enum's values to their wire strings. Index 0 is the zero
// value, which is never valid: a forgotten field cannot silently mean "public"
// or "auto".
type enumNames[T ~uint8] struct {
	what  string
	names []string // names[0] is unused
}

func (e enumNames[T]) text(v T) ([]byte, error) {
	if v == 0 || int(v) >= len(e.names) {
		return nil, fmt.Errorf("%w: invalid %s value %d", ErrInvalidValue, e.what, uint8(v))
	}
	return []byte(e.names[v]), nil
}

func (e enumNames[T]) str(v T) string {
	if v == 0 || int(v) >= len(e.names) {
		return fmt.Sprintf("%s(%d)", e.what, uint8(v))
	}
	return e.names[v]
}

func (e enumNames[T]) parse(b []byte) (T, error) {
	for i := 1; i < len(e.names); i++ {
		if e.names[i] == string(b) {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown %s %q", ErrUnknownVariant, e.what, b)
}

// DataClass is ordered Public < Private < Secret; compare with < and >.
type DataClass uint8

const (
	Public DataClass = iota + 1
	Private
	Secret
)

var dataClassNames = enumNames[DataClass]{"data class", []string{"", "public", "private", "secret"}}

func (c DataClass) String() string                { return dataClassNames.str(c) }
func (c DataClass) MarshalText() ([]byte, error)  { return dataClassNames.text(c) }
func (c *DataClass) UnmarshalText(b []byte) error { return parseInto(dataClassNames, b, c) }

// Valid reports whether c is one of the three classes.
func (c DataClass) Valid() bool { return c >= Public && c <= Secret }

// Valid reports whether m is auto, ask or deny.
func (m Mode) Valid() bool { return m >= Auto && m <= Deny }

// Mode is a grant's mode.
type Mode uint8

const (
	Auto Mode = iota + 1
	Ask
	Deny
)

var modeNames = enumNames[Mode]{"mode", []string{"", "auto", "ask", "deny"}}

func (m Mode) String() string                { return modeNames.str(m) }
func (m Mode) MarshalText() ([]byte, error)  { return modeNames.text(m) }
func (m *Mode) UnmarshalText(b []byte) error { return parseInto(modeNames, b, m) }

// DenyReason says why a call was denied.
type DenyReason uint8

const (
	NoGrant DenyReason = iota + 1
	GrantExpired
	TaintTooHigh
	DeniedByGrant
	ApprovalRefused
	ApprovalExpired
	GrantsInvalid
	AuditUnavailable
	InvalidArguments
	StateUnreadable
	// SecretUnavailable: the matched grant names a secret brokerd cannot
	// read (issue 15). Appended last: the values above keep their numbers.
	SecretUnavailable
	// UnattendedDenied: the matched grant asks, and the session is a
	// scheduled job's whose file says unattended_ask = "deny" (issue 17).
	// Appended last: the values above keep their numbers.
	UnattendedDenied
)

var denyReasonNames = enumNames[DenyReason]{"deny reason", []string{"",
	"no_grant", "grant_expired", "taint_too_high", "denied_by_grant", "approval_refused",
	"approval_expired", "grants_invalid", "audit_unavailable", "invalid_arguments", "state_unreadable",
	"secret_unavailable", "unattended_denied"}}

// AllDenyReasons lists every reason, in declaration order.
func AllDenyReasons() []DenyReason {
	out := make([]DenyReason, 0, len(denyReasonNames.names)-1)
	for i := 1; i < len(denyReasonNames.names); i++ {
		out = append(out, DenyReason(i))
	}
	return out
}

func (r DenyReason) String() string                { return denyReasonNames.str(r) }
func (r DenyReason) MarshalText() ([]byte, error)  { return denyReasonNames.text(r) }
func (r *DenyReason) UnmarshalText(b []byte) error { return parseInto(denyReasonNames, b, r) }

// ErrorCode is the code of an error message.
type ErrorCode uint8

const (
	BadFrame ErrorCode = iota + 1
	BadVersion
	BadMessage
	Internal
	Forbidden
	NoSuchApproval
	// Issue 17, appended: the admin request names a note or job brokerd
	// does not have, or asks to start a job whose previous run is still
	// under way.
	NoSuchNote
	NoSuchJob
	JobRunning
)

var errorCodeNames = enumNames[ErrorCode]{"error code", []string{"",
	"bad_frame", "bad_version", "bad_message", "internal", "forbidden", "no_such_approval",
	"no_such_note", "no_such_job", "job_running"}}

// AllErrorCodes lists every code, in declaration order.
func AllErrorCodes() []ErrorCode {
	out := make([]ErrorCode, 0, len(errorCodeNames.names)-1)
	for i := 1; i < len(errorCodeNames.names); i++ {
		out = append(out, ErrorCode(i))
	}
	return out
}

func (c ErrorCode) String() string                { return errorCodeNames.str(c) }
func (c ErrorCode) MarshalText() ([]byte, error)  { return errorCodeNames.text(c) }
func (c *ErrorCode) UnmarshalText(b []byte) error { return parseInto(errorCodeNames, b, c) }

// ApprovalAnswer is how a pending approval ended.
type ApprovalAnswer uint8

const (
	Approved ApprovalAnswer = iota + 1
	Refused
	Expired
)

var approvalAnswerNames = enumNames[ApprovalAnswer]{"approval answer", []string{"", "approved", "refused", "expired"}}

func (a ApprovalAnswer) String() string                { return approvalAnswerNames.str(a) }
func (a ApprovalAnswer) MarshalText() ([]byte, error)  { return approvalAnswerNames.text(a) }
func (a *ApprovalAnswer) UnmarshalText(b []byte) error { return parseInto(approvalAnswerNames, b, a) }

// ResultStatus is what a Result audit record describes.
type ResultStatus uint8

const (
	StatusResult ResultStatus = iota + 1
	StatusFailed
)

var resultStatusNames = enumNames[ResultStatus]{"result status", []string{"", "result", "failed"}}

func (s ResultStatus) String() string                { return resultStatusNames.str(s) }
func (s ResultStatus) MarshalText() ([]byte, error)  { return resultStatusNames.text(s) }
func (s *ResultStatus) UnmarshalText(b []byte) error { return parseInto(resultStatusNames, b, s) }

// HeadProblem is how the audit log disagreed with the head brokerd keeps
// outside it, in an AcceptedHead record.
type HeadProblem uint8

const (
	// HeadMissing: no head file, while the log has records.
	HeadMissing HeadProblem = iota + 1
	// HeadDamaged: the head file cannot be read as a head.
	HeadDamaged
	// HeadBeyondLog: the log has no record with the head's seq: it is
	// shorter than the head, or empty.
	HeadBeyondLog
	// HeadDiffers: the record with the head's seq is not the one the head
	// names.
	HeadDiffers
)

var headProblemNames = enumNames[HeadProblem]{"head problem", []string{"", "missing", "damaged", "beyond_log", "differs"}}

func (p HeadProblem) String() string                { return headProblemNames.str(p) }
func (p HeadProblem) MarshalText() ([]byte, error)  { return headProblemNames.text(p) }
func (p *HeadProblem) UnmarshalText(b []byte) error { return parseInto(headProblemNames, b, p) }

func parseInto[T ~uint8](e enumNames[T], b []byte, dst *T) error {
	v, err := e.parse(b)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// ApprovalEnd is how a pending approval ended, as brokerd tells gatewayd
// (issue 14): the three answers the audit log records, and abandoned, which
// it does not (loopd left, or brokerd stopped, while the call waited).
type ApprovalEnd uint8

const (
	EndApproved ApprovalEnd = iota + 1
	EndRefused
	EndExpired
	EndAbandoned
)

var approvalEndNames = enumNames[ApprovalEnd]{"approval end", []string{"", "approved", "refused", "expired", "abandoned"}}

func (a ApprovalEnd) String() string                { return approvalEndNames.str(a) }
func (a ApprovalEnd) MarshalText() ([]byte, error)  { return approvalEndNames.text(a) }
func (a *ApprovalEnd) UnmarshalText(b []byte) error { return parseInto(approvalEndNames, b, a) }
