package audit

import (
	"math/rand/v2"
	"strings"

	"boxmaker/wire"
)

// Random valid records, for the differential tests of the parser and for
// benchmark logs.

var nastyRunes = []rune{'a', 'z', '0', ' ', '/', '{', '"', '\\', '<', '>', '&', 0, 1, '\b', '\t', '\n', 0x0b, '\f', '\r',
	0x1b, 0x1f, 0x7f, 0x80, 0x9f, 'é', '€', 0x2028, 0x2029, 0xfffd, 0x1d11e, 0x10ffff}

func randString(rng *rand.Rand, maxLen int) string {
	var b strings.Builder
	n := rng.IntN(maxLen + 1)
	for range n {
		if rng.IntN(3) == 0 {
			b.WriteRune(nastyRunes[rng.IntN(len(nastyRunes))])
		} else {
			b.WriteByte(byte(' ' + rng.IntN(95)))
		}
	}
	return b.String()
}

func randOptString(rng *rand.Rand) *string {
	if rng.IntN(3) == 0 {
		return nil
	}
	s := randString(rng, 20)
	return &s
}

func randID(rng *rand.Rand) wire.SessionID {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789-"
	b := make([]byte, 1+rng.IntN(64))
	for i := range b {
		b[i] = chars[rng.IntN(len(chars))]
	}
	return sid(string(b))
}

func randHash(rng *rand.Rand) wire.Hash32 {
	var h wire.Hash32
	for i := range h {
		h[i] = byte(rng.Uint32())
	}
	return h
}

func randUint(rng *rand.Rand) uint64 {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return ^uint64(0) - uint64(rng.IntN(3))
	case 2:
		return uint64(rng.IntN(1000))
	}
	return rng.Uint64()
}

func randOutcome(rng *rand.Rand) wire.DecisionRecord {
	switch rng.IntN(3) {
	case 0:
		return wire.OutcomeAllowed{}
	case 1:
		return wire.OutcomeAsk{}
	}
	reasons := wire.AllDenyReasons()
	return wire.OutcomeDenied{Reason: reasons[rng.IntN(len(reasons))]}
}

func randClass(rng *rand.Rand) wire.DataClass { return wire.DataClass(1 + rng.IntN(3)) }

func randEvent(rng *rand.Rand) wire.AuditEvent {
	switch rng.IntN(11) {
	case 0:
		var gh *wire.Hash32
		if rng.IntN(2) == 0 {
			h := randHash(rng)
			gh = &h
		}
		return wire.DecisionEvent{Session: randID(rng), Call: wire.CallID(randUint(rng)), Tool: randString(rng, 12),
			Arguments: randString(rng, 200), Outcome: randOutcome(rng), Grant: randOptString(rng), GrantSha256: gh,
			Taint: randClass(rng), Untrusted: rng.IntN(2) == 0}
	case 1:
		return wire.ApprovalEvent{Session: randID(rng), Call: wire.CallID(randUint(rng)), Decision: randUint(rng),
			Answer: wire.ApprovalAnswer(1 + rng.IntN(3)), By: randOptString(rng), Post: randOptString(rng),
			Reason: randOptString(rng), Outcome: randOutcome(rng)}
	case 2:
		return wire.ResultEvent{Session: randID(rng), Call: wire.CallID(randUint(rng)), Decision: randUint(rng),
			Status: wire.ResultStatus(1 + rng.IntN(2)), Class: randClass(rng), Untrusted: rng.IntN(2) == 0,
			Truncated: rng.IntN(2) == 0, Bytes: randUint(rng), Sha256: randHash(rng), TaintAfter: randClass(rng)}
	case 3:
		return wire.RecoveryEvent{TornBytes: randUint(rng), TornSha256: randHash(rng)}
	case 4:
		ev := wire.AcceptedHeadEvent{Problem: wire.HeadProblem(1 + rng.IntN(4))}
		if rng.IntN(3) > 0 {
			n, h := randUint(rng), randHash(rng)
			ev.HeadSeq, ev.HeadSha256 = &n, &h
		}
		return ev
	case 5:
		return wire.NotePromotedEvent{Note: randString(rng, 20), By: randString(rng, 26), Taint: randClass(rng), Untrusted: rng.IntN(2) == 0}
	case 6:
		return wire.NoteDeletedEvent{Note: randString(rng, 20), By: randString(rng, 26)}
	case 7:
		return wire.JobStartedEvent{Job: randString(rng, 20), Session: randID(rng), Trigger: wire.JobTrigger(1 + rng.IntN(3)),
			Due: randTime(rng), JobSha256: randHash(rng)}
	case 8:
		return wire.JobSkippedEvent{Job: randString(rng, 20), Due: randTime(rng), Reason: wire.SkipOverlap}
	case 9:
		return wire.JobEndedEvent{Job: randString(rng, 20), Session: randID(rng), Status: wire.JobStatus(1 + rng.IntN(2)),
			Message: randOptString(rng)}
	}
	return wire.AcceptedBreakEvent{File: randString(rng, 20), Line: randUint(rng), LastGood: randHash(rng)}
}

// randTime is a millisecond from 1970 to 9999, often near a month's end.
func randTime(rng *rand.Rand) wire.Timestamp {
	if rng.IntN(2) == 0 {
		return wire.Timestamp(rng.Int64N(253402300800000))
	}
	// The last day of a random month, to exercise month lengths and leap years.
	y := 1970 + rng.IntN(8030)
	m := 1 + rng.IntN(12)
	d := int(daysIn(int64(m), int64(y)))
	return wire.Timestamp(daysFromCivil(int64(y), int64(m), int64(d))*86400000 + rng.Int64N(86400000))
}

func randRecord(rng *rand.Rand) wire.AuditRecord {
	return wire.AuditRecord{Seq: randUint(rng), Time: randTime(rng), Prev: randHash(rng), Event: randEvent(rng)}
}
