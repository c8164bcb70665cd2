package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Version is the only protocol version.
const Version = 1

// Envelope is one frame's JSON: {"v":1,"id":7,"final":true,"msg":{"kind":…,"body":…}}.
// Every frame of a response carries the request's id; only the last is final.
type Envelope struct {
	V     uint32
	ID    uint64
	Final bool
	Msg   Message
}

// Message is the adjacently tagged payload of an envelope; Kind is its tag.
type Message interface{ Kind() string }

// Message kinds.
const (
	KindToolRequest   = "tool_request"
	KindToolResponse  = "tool_response"
	KindError         = "error"
	KindApprovals     = "approvals"
	KindApprovalList  = "approval_list"
	KindApprove       = "approve"
	KindApproveResult = "approve_result"
	KindRefuse        = "refuse"
	KindOK            = "ok"
	KindCheckGrants   = "check_grants"
	KindGrantsReport  = "grants_report"
	KindSay           = "say"
	KindTurnEvent     = "turn_event"

	// gateway.sock (wire/gateway.go, issue 14)
	KindBrokerStart     = "broker_start"
	KindAuditHead       = "audit_head"
	KindApprovalRequest = "approval_request"
	KindApprovalPosted  = "approval_posted"
	KindOwnerAnswer     = "owner_answer"
	KindApprovalEnded   = "approval_ended"

	// admin.sock, memory and jobs (wire/jobs.go, issue 17)
	KindNotesList       = "notes_list"
	KindNoteList        = "note_list"
	KindNoteShow        = "note_show"
	KindNoteShown       = "note_shown"
	KindNotePromote     = "note_promote"
	KindNoteDelete      = "note_delete"
	KindJobsList        = "jobs_list"
	KindJobList         = "job_list"
	KindJobRunNow       = "job_run_now"
	KindJobRunStarted   = "job_run_started"
	KindJobResult       = "job_result"
	KindJobResultPosted = "job_result_posted"

	// admin.sock and loop.sock, for bxctl doctor (wire/health.go, issue 27)
	KindHealth       = "health"
	KindHealthReport = "health_report"
)

// WireError reports a protocol or server error; the connection is closed after it.
type WireError struct {
	Code   ErrorCode `json:"code"`
	Detail string    `json:"detail"`
}

func (ToolRequest) Kind() string { return KindToolRequest }
func (WireError) Kind() string   { return KindError }

var messages = map[string]func([]byte) (Message, error){
	KindToolRequest:   as[ToolRequest, Message],
	KindToolResponse:  func(b []byte) (Message, error) { return toolResponses.decode(b) },
	KindError:         as[WireError, Message],
	KindApprovals:     as[Approvals, Message],
	KindApprovalList:  as[ApprovalList, Message],
	KindApprove:       as[Approve, Message],
	KindApproveResult: as[ApproveResult, Message],
	KindRefuse:        as[Refuse, Message],
	KindOK:            as[OK, Message],
	KindCheckGrants:   as[CheckGrants, Message],
	KindGrantsReport:  as[GrantsReport, Message],
	KindSay:           as[Say, Message],
	KindTurnEvent:     func(b []byte) (Message, error) { return turnEvents.decode(b) },

	KindBrokerStart:     as[BrokerStart, Message],
	KindAuditHead:       as[AuditHead, Message],
	KindApprovalRequest: as[ApprovalRequest, Message],
	KindApprovalPosted:  as[ApprovalPosted, Message],
	KindOwnerAnswer:     as[OwnerAnswer, Message],
	KindApprovalEnded:   as[ApprovalEnded, Message],

	KindNotesList:       as[NotesList, Message],
	KindNoteList:        as[NoteList, Message],
	KindNoteShow:        as[NoteShow, Message],
	KindNoteShown:       as[NoteShown, Message],
	KindNotePromote:     as[NotePromote, Message],
	KindNoteDelete:      as[NoteDelete, Message],
	KindJobsList:        as[JobsList, Message],
	KindJobList:         as[JobList, Message],
	KindJobRunNow:       as[JobRunNow, Message],
	KindJobRunStarted:   as[JobRunStarted, Message],
	KindJobResult:       as[JobResult, Message],
	KindJobResultPosted: as[JobResultPosted, Message],

	KindHealth:       as[Health, Message],
	KindHealthReport: as[HealthReport, Message],
}

// MarshalEnvelope encodes e. Its message must be one of the kinds above.
func MarshalEnvelope(e Envelope) ([]byte, error) {
	if e.Msg == nil {
		return nil, fmt.Errorf("wire: envelope %d has no message", e.ID)
	}
	if _, ok := messages[e.Msg.Kind()]; !ok {
		return nil, fmt.Errorf("wire: unknown message kind %q", e.Msg.Kind())
	}
	body, err := Marshal(e.Msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+80)
	out = append(out, `{"v":`...)
	out = strconv.AppendUint(out, uint64(e.V), 10)
	out = append(out, `,"id":`...)
	out = strconv.AppendUint(out, e.ID, 10)
	out = append(out, `,"final":`...)
	out = strconv.AppendBool(out, e.Final)
	out = append(out, `,"msg":{"kind":"`...)
	out = append(out, e.Msg.Kind()...)
	out = append(out, `","body":`...)
	out = append(out, body...)
	return append(out, "}}"...), nil
}

// VersionError is returned for an envelope whose v is not 1. The caller
// answers with error bad_version under ID and closes the connection.
type VersionError struct {
	V  uint64
	ID uint64
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("wire: unsupported protocol version %d (this is version %d)", e.V, Version)
}

// UnmarshalEnvelope decodes one envelope strictly: exactly the four members
// in order, a known kind, a body valid for it, and canonical bytes.
func UnmarshalEnvelope(data []byte) (Envelope, error) {
	if e, ok := fastEnvelope(data); ok {
		return e, nil
	}
	return slowEnvelope(data)
}

// slowEnvelope decodes any input token by token, so that a refused one gets
// the error that says what is wrong with it.
func slowEnvelope(data []byte) (Envelope, error) {
	var e Envelope
	if !utf8.Valid(data) {
		return e, &DecodeError{KindInvalidUTF8, errors.New("input is not valid UTF-8")}
	}
	r := envReader{dec: jsontext.NewDecoder(bytes.NewReader(data), options)}
	r.delim('{')
	v := r.uintMember("v", 1<<32-1)
	e.ID = r.uintMember("id", 1<<64-1)
	if r.err == nil && v != Version {
		return e, &VersionError{V: v, ID: e.ID}
	}
	e.V = uint32(v)
	e.Final = r.boolMember("final")
	r.name("msg")
	r.delim('{')
	kind := r.stringMember("kind")
	r.name("body")
	body := r.value()
	r.delim('}')
	r.delim('}')
	if r.err != nil {
		return e, classify(r.err)
	}
	if off := r.dec.InputOffset(); off != int64(len(data)) {
		return e, &DecodeError{KindTrailingData, fmt.Errorf("%d bytes after the envelope", int64(len(data))-off)}
	}
	dec, ok := messages[kind]
	if !ok {
		return e, &DecodeError{KindUnknownVariant, fmt.Errorf("unknown message kind %q", kind)}
	}
	msg, err := dec(body)
	if err != nil {
		return e, classify(err)
	}
	e.Msg = msg
	out, err := MarshalEnvelope(e)
	if err != nil {
		return e, &DecodeError{KindInvalidValue, err}
	}
	if !bytes.Equal(out, data) {
		return e, &DecodeError{KindNotCanonical, fmt.Errorf("re-encoding differs from the input at byte %d", firstDiff(out, data))}
	}
	return e, nil
}

var envelopeMembers = map[string]bool{"v": true, "id": true, "final": true, "msg": true, "kind": true, "body": true}

// envReader reads the envelope's fixed shape token by token; the first error sticks.
type envReader struct {
	dec *jsontext.Decoder
	err error
}

func (r *envReader) token() jsontext.Token {
	if r.err != nil {
		return jsontext.Token{}
	}
	t, err := r.dec.ReadToken()
	r.err = err
	return t
}

func (r *envReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = &DecodeError{KindNotCanonical, fmt.Errorf(format, args...)}
	}
}

func (r *envReader) delim(k jsontext.Kind) {
	if t := r.token(); r.err == nil && t.Kind() != k {
		r.fail("envelope: expected %v, got %v", k, t.Kind())
	}
}

func (r *envReader) name(want string) {
	t := r.token()
	if r.err != nil {
		return
	}
	if t.Kind() != '"' {
		r.fail("envelope: expected member %q, got %v", want, t.Kind())
		return
	}
	switch got := t.String(); {
	case got == want:
	case envelopeMembers[got]:
		r.fail("envelope: member %q is out of order or %q is missing", got, want)
	default:
		r.err = &DecodeError{KindUnknownField, fmt.Errorf("envelope: unknown member %q where %q goes", got, want)}
	}
}

func (r *envReader) uintMember(name string, max uint64) uint64 {
	r.name(name)
	t := r.token()
	if r.err != nil {
		return 0
	}
	if t.Kind() != '0' {
		r.err = &DecodeError{KindWrongType, fmt.Errorf("envelope: %q must be an integer", name)}
		return 0
	}
	n, err := parseCanonicalUint(t.String(), max)
	if err != nil {
		r.err = &DecodeError{KindNumber, fmt.Errorf("envelope: %q: %w", name, err)}
	}
	return n
}

func (r *envReader) boolMember(name string) bool {
	r.name(name)
	t := r.token()
	if r.err == nil && t.Kind() != 't' && t.Kind() != 'f' {
		r.err = &DecodeError{KindWrongType, fmt.Errorf("envelope: %q must be a boolean", name)}
	}
	return r.err == nil && t.Bool()
}

func (r *envReader) stringMember(name string) string {
	r.name(name)
	t := r.token()
	if r.err == nil && t.Kind() != '"' {
		r.err = &DecodeError{KindWrongType, fmt.Errorf("envelope: %q must be a string", name)}
	}
	if r.err != nil {
		return ""
	}
	return t.String()
}

func (r *envReader) value() []byte {
	if r.err != nil {
		return nil
	}
	v, err := r.dec.ReadValue()
	r.err = err
	return bytes.Clone(v)
}

// parseCanonicalUint accepts only plain decimal digits without leading zeros.
func parseCanonicalUint(s string, max uint64) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%q is not a canonical unsigned integer", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not an unsigned integer", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > max {
		return 0, fmt.Errorf("%s is out of range", s)
	}
	return n, nil
}
