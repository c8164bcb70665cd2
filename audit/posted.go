package audit

import (
	"fmt"

	"boxmaker/wire"
)

// The head posted off the host (issue 14). brokerd's own head file
// (head.go) shows a log cut short or rewritten, unless whoever rewrote the
// log rewrote the head file too, as a compromised brokerd could. gatewayd
// therefore posts the head, seq and hash, to the owner on Mattermost, where
// brokerd cannot change it; `bxctl audit verify --head SEQ:HASH` holds the
// log to it. Unlike the head file, a posted head can name any record, not
// only the last one: the log may have grown since it was posted.

// PostedHeadError is how the log disagrees with a posted head.
type PostedHeadError struct {
	Posted wire.AuditHead
	What   string
}

func (e *PostedHeadError) Error() string {
	return "audit: " + e.What + "\nsee docs/runbook.md#audit-head-posted-mismatch"
}

func (e *PostedHeadError) Unwrap() error { return ErrHeadMismatch }

// comparePosted says how the verified log disagrees with the posted head, if
// it does: the record with its seq must be part of the chain and hash to its
// hash.
func comparePosted(posted wire.AuditHead, rep ChainReport) *PostedHeadError {
	seq := posted.Seq
	e := &PostedHeadError{Posted: posted}
	switch w := rep.found(seq); {
	case w != nil && w.hash == posted.Hash:
		return nil
	case w != nil:
		e.What = fmt.Sprintf("record %d (%s) hashes to %s, but the posted head says %s", seq, w.loc, w.hash, posted.Hash)
	case rep.Failure != nil:
		e.What = fmt.Sprintf("the chain holds no record %d, which the posted head names (%s): it does not verify past %s",
			seq, posted.Hash, rep.Failure.Location)
	case rep.Head == nil:
		e.What = fmt.Sprintf("the log has no records, but the posted head names record %d (%s)", seq, posted.Hash)
	case seq >= rep.NextSeq:
		e.What = fmt.Sprintf("the log ends before record %d, which the posted head names (%s); its next seq is %d",
			seq, posted.Hash, rep.NextSeq)
	default:
		// An accepted break skips seqs: those in the broken stretch are
		// not records of the chain.
		e.What = fmt.Sprintf("the chain holds no record %d, which the posted head names (%s)", seq, posted.Hash)
	}
	return e
}
