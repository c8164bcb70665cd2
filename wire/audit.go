package wire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// AuditRecord is one line of the audit log (M3a §5).
type AuditRecord struct {
	Seq   uint64     `json:"seq"`
	Time  Timestamp  `json:"time"`
	Prev  Hash32     `json:"prev"`
	Event AuditEvent `json:"event"`
}

// AuditEvent is tagged by "type": the *Event types below.
type AuditEvent interface{ isAuditEvent() }

// DecisionEvent records a policy decision, for every tool request.
type DecisionEvent struct {
	Session     SessionID      `json:"session"`
	Call        CallID         `json:"call"`
	Tool        string         `json:"tool"`
	Arguments   string         `json:"arguments"`
	Outcome     DecisionRecord `json:"outcome"`
	Grant       *string        `json:"grant"`
	GrantSha256 *Hash32        `json:"grant_sha256"`
	Taint       DataClass      `json:"taint"`
	Untrusted   bool           `json:"untrusted"`
}

// ApprovalEvent records how a pending approval ended and the re-decision.
type ApprovalEvent struct {
	Session  SessionID      `json:"session"`
	Call     CallID         `json:"call"`
	Decision uint64         `json:"decision"`
	Answer   ApprovalAnswer `json:"answer"`
	By       *string        `json:"by"`
	Post     *string        `json:"post"`
	Reason   *string        `json:"reason"`
	Outcome  DecisionRecord `json:"outcome"`
}

// ResultEvent records a tool's result by hash and size, never its content.
type ResultEvent struct {
	Session    SessionID    `json:"session"`
	Call       CallID       `json:"call"`
	Decision   uint64       `json:"decision"`
	Status     ResultStatus `json:"status"`
	Class      DataClass    `json:"class"`
	Untrusted  bool         `json:"untrusted"`
	Truncated  bool         `json:"truncated"`
	Bytes      uint64       `json:"bytes"`
	Sha256     Hash32       `json:"sha256"`
	TaintAfter DataClass    `json:"taint_after"`
}

// RecoveryEvent follows a torn line that startup kept.
type RecoveryEvent struct {
	TornBytes  uint64 `json:"torn_bytes"`
	TornSha256 Hash32 `json:"torn_sha256"`
}

// AcceptedBreakEvent records the owner accepting a chain failure.
type AcceptedBreakEvent struct {
	File     string `json:"file"`
	Line     uint64 `json:"line"`
	LastGood Hash32 `json:"last_good"`
}

// AcceptedHeadEvent records the owner accepting, at startup, a log that does
// not hold the last record brokerd wrote, as named by the head it keeps
// outside the log. HeadSeq and HeadSha256 are the head's (null when it is
// missing or damaged).
type AcceptedHeadEvent struct {
	Problem    HeadProblem `json:"problem"`
	HeadSeq    *uint64     `json:"head_seq"`
	HeadSha256 *Hash32     `json:"head_sha256"`
}

// NotePromotedEvent records the owner vouching for a note (issue 17): By
// promoted note Note, whose label had Taint and, before the promotion,
// Untrusted (promotion clears the mark, never the taint).
type NotePromotedEvent struct {
	Note      string    `json:"note"`
	By        string    `json:"by"`
	Taint     DataClass `json:"taint"`
	Untrusted bool      `json:"untrusted"`
}

// NoteDeletedEvent records By deleting note Note.
type NoteDeletedEvent struct {
	Note string `json:"note"`
	By   string `json:"by"`
}

// JobStartedEvent records a job's run starting as session Session: why
// (Trigger), the time it was due, and the SHA-256 of the job file's bytes
// it runs under.
type JobStartedEvent struct {
	Job       string     `json:"job"`
	Session   SessionID  `json:"session"`
	Trigger   JobTrigger `json:"trigger"`
	Due       Timestamp  `json:"due"`
	JobSha256 Hash32     `json:"job_sha256"`
}

// JobSkippedEvent records a due run that did not start.
type JobSkippedEvent struct {
	Job    string     `json:"job"`
	Due    Timestamp  `json:"due"`
	Reason SkipReason `json:"reason"`
}

// JobEndedEvent records how a job's run ended; Message says why it
// failed (null when it did not).
type JobEndedEvent struct {
	Job     string    `json:"job"`
	Session SessionID `json:"session"`
	Status  JobStatus `json:"status"`
	Message *string   `json:"message"`
}

func (DecisionEvent) isAuditEvent()      {}
func (ApprovalEvent) isAuditEvent()      {}
func (ResultEvent) isAuditEvent()        {}
func (RecoveryEvent) isAuditEvent()      {}
func (AcceptedBreakEvent) isAuditEvent() {}
func (AcceptedHeadEvent) isAuditEvent()  {}
func (NotePromotedEvent) isAuditEvent()  {}
func (NoteDeletedEvent) isAuditEvent()   {}
func (JobStartedEvent) isAuditEvent()    {}
func (JobSkippedEvent) isAuditEvent()    {}
func (JobEndedEvent) isAuditEvent()      {}

func (v DecisionEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain DecisionEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"decision", plain(v)})
}

func (v ApprovalEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain ApprovalEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"approval", plain(v)})
}

func (v ResultEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain ResultEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"result", plain(v)})
}

func (v RecoveryEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain RecoveryEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"recovery", plain(v)})
}

func (v AcceptedBreakEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain AcceptedBreakEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"accepted_break", plain(v)})
}

func (v AcceptedHeadEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain AcceptedHeadEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"accepted_head", plain(v)})
}

func (v NotePromotedEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain NotePromotedEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"note_promoted", plain(v)})
}

func (v NoteDeletedEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain NoteDeletedEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"note_deleted", plain(v)})
}

func (v JobStartedEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain JobStartedEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"job_started", plain(v)})
}

func (v JobSkippedEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain JobSkippedEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"job_skipped", plain(v)})
}

func (v JobEndedEvent) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain JobEndedEvent
	return json.MarshalEncode(e, struct {
		Tag   string `json:"type"`
		plain `json:",inline"`
	}{"job_ended", plain(v)})
}

var auditEvents = union[AuditEvent]{"audit event", "type", map[string]func([]byte) (AuditEvent, error){
	"decision":       as[DecisionEvent, AuditEvent],
	"approval":       as[ApprovalEvent, AuditEvent],
	"result":         as[ResultEvent, AuditEvent],
	"recovery":       as[RecoveryEvent, AuditEvent],
	"accepted_break": as[AcceptedBreakEvent, AuditEvent],
	"accepted_head":  as[AcceptedHeadEvent, AuditEvent],
	"note_promoted":  as[NotePromotedEvent, AuditEvent],
	"note_deleted":   as[NoteDeletedEvent, AuditEvent],
	"job_started":    as[JobStartedEvent, AuditEvent],
	"job_skipped":    as[JobSkippedEvent, AuditEvent],
	"job_ended":      as[JobEndedEvent, AuditEvent],
}}

// DecisionRecord is the plain record of a decision, tagged by "outcome".
type DecisionRecord interface{ isDecisionRecord() }

// OutcomeAllowed: an auto grant allowed the call.
type OutcomeAllowed struct{}

// OutcomeAsk: an ask grant matched; the owner decides.
type OutcomeAsk struct{}

// OutcomeDenied: the call is denied for Reason.
type OutcomeDenied struct {
	Reason DenyReason `json:"reason"`
}

func (OutcomeAllowed) isDecisionRecord() {}
func (OutcomeAsk) isDecisionRecord()     {}
func (OutcomeDenied) isDecisionRecord()  {}

func (v OutcomeAllowed) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain OutcomeAllowed
	return json.MarshalEncode(e, struct {
		Tag   string `json:"outcome"`
		plain `json:",inline"`
	}{"allowed", plain(v)})
}

func (v OutcomeAsk) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain OutcomeAsk
	return json.MarshalEncode(e, struct {
		Tag   string `json:"outcome"`
		plain `json:",inline"`
	}{"ask", plain(v)})
}

func (v OutcomeDenied) MarshalJSONTo(e *jsontext.Encoder) error {
	type plain OutcomeDenied
	return json.MarshalEncode(e, struct {
		Tag   string `json:"outcome"`
		plain `json:",inline"`
	}{"denied", plain(v)})
}

var decisionRecords = union[DecisionRecord]{"decision outcome", "outcome", map[string]func([]byte) (DecisionRecord, error){
	"allowed": as[OutcomeAllowed, DecisionRecord],
	"ask":     as[OutcomeAsk, DecisionRecord],
	"denied":  as[OutcomeDenied, DecisionRecord],
}}
