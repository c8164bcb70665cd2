package wire

import (
	"errors"
	"fmt"
)

// The gateway protocol on gateway.sock (issue 14): gatewayd listens, brokerd
// is the client. Every request is one final frame on its own connection.
//
// One connection per pending approval, held open while it waits:
//
//	→ approval_request { broker, approval, session, call, tool, arguments, grant, taint, created, expires, digest, head }   final: true
//	← approval_posted { post }                      final: false, once the approval is on Mattermost
//	← owner_answer { answer, by, post, reason }     final: true, the first qualifying answer of an owner
//
// or an error (final) when gatewayd cannot post it. brokerd closes the
// connection when the approval ends some other way. However it ended,
// brokerd then says so on a connection of its own, and gatewayd edits the post:
//
//	→ approval_ended { approval, end, by, post, reason, denied }   final: true
//	← ok, or error no_such_approval when gatewayd has no post for it
//
// At start, and at least hourly while records are written:
//
//	→ broker_start { broker, head }   → audit_head { seq, hash }   final: true
//	← ok
//
// When a scheduled job's run ends and its job file says to post the result
// (issue 17), one connection for it:
//
//	→ job_result { job, session, status, content }   final: true
//	← job_result_posted { post }                      final: true
//
// or an error (final): bad_message when the job_result breaks JobResult.Check
// (its content over MaxJobResultContent, say), internal when gatewayd cannot
// post it on Mattermost. gatewayd posts it where it posts that session's
// approvals, under a header line of its own, with the content shown as data.

// AuditHead names the audit log's last record: its seq and its hash (the
// SHA-256 of its line, the next record's prev).
type AuditHead struct {
	Seq  uint64 `json:"seq"`
	Hash Hash32 `json:"hash"`
}

// BrokerStart is brokerd's first word to gatewayd after it starts. Broker
// is this run's instance (32 lowercase hex digits, new at every start): an
// approval of an earlier instance is gone, since approvals do not survive a
// restart. Head is null while the log has no record.
type BrokerStart struct {
	Broker string     `json:"broker"`
	Head   *AuditHead `json:"head"`
}

// ApprovalRequest is the approval brokerd composes for gatewayd to post:
// everything the owner sees in `bxctl approvals`, the digest of the exact
// call (CallDigest) and the audit head when the call became pending.
type ApprovalRequest struct {
	Broker    string    `json:"broker"`
	Approval  uint64    `json:"approval"`
	Session   SessionID `json:"session"`
	Call      CallID    `json:"call"`
	Tool      string    `json:"tool"`
	Arguments string    `json:"arguments"`
	Grant     string    `json:"grant"`
	Taint     DataClass `json:"taint"`
	Created   Timestamp `json:"created"`
	Expires   Timestamp `json:"expires"`
	Digest    Hash32    `json:"digest"`
	Head      AuditHead `json:"head"`
}

// ApprovalPosted says the approval is on Mattermost, as post Post.
type ApprovalPosted struct {
	Post string `json:"post"`
}

// OwnerAnswer is an owner's answer on Mattermost: approved or refused (never
// expired), by the owner's Mattermost user id, on approval post Post.
type OwnerAnswer struct {
	Answer ApprovalAnswer `json:"answer"`
	By     string         `json:"by"`
	Post   string         `json:"post"`
	Reason *string        `json:"reason"`
}

// ApprovalEnded says how approval Approval ended, whoever answered: By is
// "bxctl" or a Mattermost user id (null when it expired or was abandoned),
// Post the approval post an answer on Mattermost came on, Reason a refusal's
// text, Denied the recorded outcome's reason when the call does not run
// (null when it ran, and when it was abandoned).
type ApprovalEnded struct {
	Approval uint64      `json:"approval"`
	End      ApprovalEnd `json:"end"`
	By       *string     `json:"by"`
	Post     *string     `json:"post"`
	Reason   *string     `json:"reason"`
	Denied   *DenyReason `json:"denied"`
}

func (BrokerStart) Kind() string     { return KindBrokerStart }
func (AuditHead) Kind() string       { return KindAuditHead }
func (ApprovalRequest) Kind() string { return KindApprovalRequest }
func (ApprovalPosted) Kind() string  { return KindApprovalPosted }
func (OwnerAnswer) Kind() string     { return KindOwnerAnswer }
func (ApprovalEnded) Kind() string   { return KindApprovalEnded }

// CallDigest is the digest of the exact call an approval is for: the SHA-256
// of the canonical JSON of its tool, arguments, grant and taint. gatewayd
// shows its DigestPrefix on the approval post and bxctl approvals shows the
// same, so the owner can see that both name one call.
func CallDigest(tool, arguments, grant string, taint DataClass) Hash32 {
	b, err := Marshal(struct {
		Tool      string    `json:"tool"`
		Arguments string    `json:"arguments"`
		Grant     string    `json:"grant"`
		Taint     DataClass `json:"taint"`
	}{tool, arguments, grant, taint})
	if err != nil {
		// Strings and a valid class always encode; an invalid class is a
		// bug of the caller, and its digest must not collide with a real one.
		return Hash32{}
	}
	return Sha256(b)
}

// DigestPrefix is the part of a digest people compare: 16 hex digits.
func DigestPrefix(h Hash32) string { return h.String()[:16] }

// ValidMattermostID says whether s has the shape of a Mattermost id (a user,
// post or channel): 26 characters of a-z and 0-9.
func ValidMattermostID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// MaxJobResultContent is the most bytes of content a job_result carries: a
// Mattermost post holds 16,383 characters, and a longer reply is shown by
// its two ends, so more would only cost memory and time on both sides.
// brokerd refuses to send more, gatewayd to take more.
const MaxJobResultContent = 64 << 10

// ErrJobResultTooLarge is JobResult.Check's error for content over
// MaxJobResultContent.
var ErrJobResultTooLarge = errors.New("wire: job result content is over 64 KiB")

// JobResult is a scheduled job's result for gatewayd to post to the owner:
// Job is the job's name (its file's stem, ValidID), Session the run's
// session, Content the reply (JobOK) or the failure's message (JobFailed),
// as text the model or loopd wrote.
type JobResult struct {
	Job     string    `json:"job"`
	Session SessionID `json:"session"`
	Status  JobStatus `json:"status"`
	Content string    `json:"content"`
}

// JobResultPosted says the job's result is on Mattermost, as post Post.
type JobResultPosted struct {
	Post string `json:"post"`
}

func (JobResult) Kind() string       { return KindJobResult }
func (JobResultPosted) Kind() string { return KindJobResultPosted }

// Check is what both ends require of a job_result beyond its decoding: a
// job name of ValidID's form, a status, and at most MaxJobResultContent
// bytes of content (ErrJobResultTooLarge).
func (r JobResult) Check() error {
	switch {
	case !ValidID(r.Job):
		return fmt.Errorf("%w: job name %q is not 1 to 64 characters of [a-z0-9-]", ErrInvalidValue, r.Job)
	case r.Session.IsZero():
		return fmt.Errorf("%w: job result has no session", ErrInvalidValue)
	case r.Status != JobOK && r.Status != JobFailed:
		return fmt.Errorf("%w: job status %s", ErrInvalidValue, r.Status)
	case len(r.Content) > MaxJobResultContent:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrJobResultTooLarge, len(r.Content), MaxJobResultContent)
	}
	return nil
}
