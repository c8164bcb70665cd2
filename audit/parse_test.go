package audit

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"boxmaker/wire"
)

// toRecord rebuilds the whole record from what parseFast read, so that the
// tests can compare it with wire.Unmarshal's.
func toRecord(b []byte, r *lineRec) wire.AuditRecord {
	rec := wire.AuditRecord{Seq: r.seq, Time: r.time, Prev: r.prevHash}
	str := func(s span) string { return unquote(b[s.start:s.end], s.esc) }
	opt := func(s span) *string {
		if s.null {
			return nil
		}
		v := str(s)
		return &v
	}
	var h wire.Hash32
	if r.hash != nil {
		h, _ = wire.ParseHash32(string(r.hash))
	}
	outcome := []wire.DecisionRecord{wire.OutcomeAllowed{}, wire.OutcomeAsk{},
		wire.OutcomeDenied{Reason: wire.DenyReason(r.x.reason + 1)}}[r.outcome]
	var session wire.SessionID
	if r.session != nil {
		session = sid(string(r.session))
	}
	switch r.kind {
	case evDecision:
		var gh *wire.Hash32
		if r.hash != nil {
			gh = &h
		}
		rec.Event = wire.DecisionEvent{Session: session, Call: wire.CallID(r.call), Tool: str(r.x.strs[0]),
			Arguments: str(r.x.strs[1]), Outcome: outcome, Grant: opt(r.x.strs[2]), GrantSha256: gh,
			Taint: wire.DataClass(r.x.enum2 + 1), Untrusted: r.x.untrusted}
	case evApproval:
		rec.Event = wire.ApprovalEvent{Session: session, Call: wire.CallID(r.call), Decision: r.x.decision,
			Answer: wire.ApprovalAnswer(r.x.enum1 + 1), By: opt(r.x.strs[0]), Post: opt(r.x.strs[1]),
			Reason: opt(r.x.strs[2]), Outcome: outcome}
	case evResult:
		rec.Event = wire.ResultEvent{Session: session, Call: wire.CallID(r.call), Decision: r.x.decision,
			Status: wire.ResultStatus(r.x.enum1 + 1), Class: wire.DataClass(r.x.enum2 + 1), Untrusted: r.x.untrusted,
			Truncated: r.x.truncated, Bytes: r.n, Sha256: h, TaintAfter: wire.DataClass(r.x.enum3 + 1)}
	case evRecovery:
		rec.Event = wire.RecoveryEvent{TornBytes: r.n, TornSha256: h}
	case evBreak:
		rec.Event = wire.AcceptedBreakEvent{File: r.file, Line: r.n, LastGood: h}
	case evHead:
		ev := wire.AcceptedHeadEvent{Problem: wire.HeadProblem(r.x.enum1 + 1)}
		if !r.x.nullN {
			n := r.n
			ev.HeadSeq = &n
		}
		if r.hash != nil {
			ev.HeadSha256 = &h
		}
		rec.Event = ev
	case evNotePromoted:
		rec.Event = wire.NotePromotedEvent{Note: str(r.x.strs[0]), By: str(r.x.strs[1]), Taint: wire.DataClass(r.x.enum2 + 1), Untrusted: r.x.untrusted}
	case evNoteDeleted:
		rec.Event = wire.NoteDeletedEvent{Note: str(r.x.strs[0]), By: str(r.x.strs[1])}
	case evJobStarted:
		rec.Event = wire.JobStartedEvent{Job: str(r.x.strs[0]), Session: session, Trigger: wire.JobTrigger(r.x.enum1 + 1), Due: r.x.due, JobSha256: h}
	case evJobSkipped:
		rec.Event = wire.JobSkippedEvent{Job: str(r.x.strs[0]), Due: r.x.due, Reason: wire.SkipReason(r.x.enum1 + 1)}
	case evJobEnded:
		rec.Event = wire.JobEndedEvent{Job: str(r.x.strs[0]), Session: session, Status: wire.JobStatus(r.x.enum1 + 1), Message: opt(r.x.strs[1])}
	}
	return rec
}

// differ checks parseFast against wire.Unmarshal on b: parseFast must accept
// exactly what wire accepts, and read the same record.
func differ(t *testing.T, b []byte) (accepted bool) {
	t.Helper()
	var want wire.AuditRecord
	werr := wire.Unmarshal(b, &want)
	var r lineRec
	var d parser
	fast := d.parseFast(b, &r)
	switch {
	case fast && werr != nil:
		t.Fatalf("parseFast accepts what wire refuses (%v):\n%q", werr, b)
	case !fast && werr == nil:
		t.Fatalf("parseFast refuses what wire accepts:\n%q", b)
	case fast:
		if got := toRecord(b, &r); !reflect.DeepEqual(got, want) {
			t.Fatalf("parseFast read\n%#v\nwire read\n%#v\nfrom %q", got, want, b)
		}
	}
	return fast
}

// mutate returns b with one random edit.
func mutate(rng *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) == 0 {
		return []byte{byte(rng.Uint32())}
	}
	i := rng.IntN(len(b))
	interesting := []byte{'"', '\\', ',', ':', '{', '}', '0', '1', '9', 'a', 'f', 'g', 'A', ' ', 'u', 'n', 0, 0x1f, 0x7f, 0x80, 0xff}
	switch rng.IntN(6) {
	case 0:
		b[i] = interesting[rng.IntN(len(interesting))]
	case 1:
		b[i] ^= byte(1 << rng.IntN(8))
	case 2:
		return append(b[:i], b[i+1:]...)
	case 3:
		return append(b[:i], append([]byte{interesting[rng.IntN(len(interesting))]}, b[i:]...)...)
	case 4:
		j := i + rng.IntN(len(b)-i)
		return append(b[:i:i], b[j:]...)
	case 5:
		j := i + rng.IntN(len(b)-i)
		return append(b[:j:j], append(bytes.Clone(b[i:j]), b[j:]...)...)
	}
	return b
}

func TestParseAgreesWithWire(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	// A few thousand here; FuzzParseLine goes on for as long as it is given.
	for range 3000 {
		rec := randRecord(rng)
		b, err := wire.Marshal(rec)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", rec, err)
		}
		if !differ(t, b) {
			t.Fatalf("a valid line was refused: %q", b)
		}
		for range 5 {
			b = mutate(rng, b)
			if differ(t, b) {
				accepted++
			}
		}
	}
	t.Logf("%d mutated lines were still valid records", accepted)
}

func TestTimestampsAgreeWithWire(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var d dateCache
	check := func(s string) {
		want, werr := wire.ParseTimestamp(s)
		got, j := d.timestamp([]byte(`"`+s+`"`), 0)
		if (werr == nil) != (j >= 0) || werr == nil && got != want {
			t.Fatalf("%q: timestamp gives %d, %d; wire gives %d, %v", s, got, j, want, werr)
		}
	}
	for _, s := range []string{"1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z",
		"2024-02-29T00:00:00.000Z", "2023-02-29T00:00:00.000Z", "2000-02-29T12:00:00.000Z", "2100-02-29T12:00:00.000Z",
		"2026-04-31T00:00:00.000Z", "2026-09-17T24:00:00.000Z", "2026-09-17T23:60:00.000Z", "2026-09-17T23:59:60.000Z",
		"2026-00-17T00:00:00.000Z", "2026-13-17T00:00:00.000Z", "2026-09-00T00:00:00.000Z", "2026-09-17t00:00:00.000Z",
		"2026-09-17T00:00:00.000z", "+026-09-17T00:00:00.000Z", "2026-09-17T00:00:00,000Z", "2026-9-17T00:00:00.0000Z"} {
		check(s)
	}
	for range 20000 {
		s := randTime(rng).String()
		check(s)
		b := []byte(s)
		b[rng.IntN(len(b))] = "0123456789-:.TZ"[rng.IntN(15)]
		check(string(b))
	}
}

func FuzzParseLine(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 30 {
		b, err := wire.Marshal(randRecord(rng))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Every event type's fixture, so that no type depends on the draw.
	fixtures, _ := filepath.Glob("../fixtures/wire/audit-*.json")
	if len(fixtures) == 0 {
		f.Fatal("no audit fixtures in ../fixtures/wire")
	}
	for _, name := range fixtures {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { differ(t, b) })
}
