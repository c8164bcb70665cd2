package audit

import (
	"encoding"
	"encoding/hex"
	"unicode/utf8"

	"boxmaker/wire"
)

// The fast line parser. wire.Unmarshal is the definition of a valid line, but
// it decodes and re-encodes (about 12 MB/s), and verification must run at
// the speed of SHA-256. parseFast accepts exactly the canonical encoding of
// an AuditRecord, byte by byte, without building it; the verifier asks
// wire.Unmarshal about every line parseFast refuses, so a line is never
// failed unless wire refuses it too. The differential tests and fuzz target
// in parse_test.go hold parseFast to accepting nothing wire refuses.

type eventKind uint8

const (
	evDecision eventKind = iota + 1
	evApproval
	evResult
	evRecovery
	evBreak
	evHead
	// Issue 17's memory and job events (parsejobs.go).
	evNotePromoted
	evNoteDeleted
	evJobStarted
	evJobSkipped
	evJobEnded
)

// eventNames are the "type" tags, in eventKind order from index 0.
var eventNames = []string{"decision", "approval", "result", "recovery", "accepted_break", "accepted_head",
	"note_promoted", "note_deleted", "job_started", "job_skipped", "job_ended"}

// Outcome tags, in order; outcomeAsk is what the verifier watches for.
var outcomeNames = []string{"allowed", "ask", "denied"}

const (
	outcomeAllowed = iota
	outcomeAsk
	outcomeDenied
)

// The names of wire's enums, read from wire itself (index 0 is value 1).
var (
	denyReasonNames = enumNames[wire.DenyReason]()
	classNames      = enumNames[wire.DataClass]()
	answerNames     = enumNames[wire.ApprovalAnswer]()
	statusNames     = enumNames[wire.ResultStatus]()
	problemNames    = enumNames[wire.HeadProblem]()
	triggerNames    = enumNames[wire.JobTrigger]()
	skipNames       = enumNames[wire.SkipReason]()
	jobStatusNames  = enumNames[wire.JobStatus]()
)

func enumNames[T interface {
	~uint8
	encoding.TextMarshaler
}]() []string {
	var names []string
	for v := 1; v < 256; v++ {
		b, err := T(v).MarshalText()
		if err != nil {
			break
		}
		names = append(names, string(b))
	}
	return names
}

// span is a string value: its contents' offsets in the line, whether they
// hold escapes, and whether the value was null instead.
type span struct {
	start, end int
	esc, null  bool
}

// lineRec is what parsing one line yields. session and hash alias the line
// (or a buffer of the slow path) and live only as long as it.
type lineRec struct {
	seq      uint64
	time     wire.Timestamp
	prevHash wire.Hash32
	kind     eventKind
	session  []byte
	call     uint64
	outcome  int
	n        uint64 // Recovery.torn_bytes, AcceptedBreak.line, Result.bytes, AcceptedHead.head_seq
	hash     []byte // hex of torn_sha256, last_good, sha256, grant_sha256 or head_sha256 (nil if null)
	file     string // AcceptedBreak.file

	x *lineExtra // the rest, which only the tests read
}

// lineExtra is the rest of a record, which the tests rebuild whole to compare
// with wire.Unmarshal's. It stays with the parser rather than travel with
// every line from VerifyDir's workers to the verifier.
type lineExtra struct {
	decision             uint64
	reason, enum1, enum2 int // deny reason; answer or status; taint or class
	enum3                int // taint_after
	untrusted, truncated bool
	strs                 [3]span // tool, arguments, grant; by, post, reason; note, by; job, message
	nullN                bool    // AcceptedHead.head_seq is null
	due                  wire.Timestamp
}

// parser is one goroutine's parsing state.
type parser struct {
	dateCache
	extra lineExtra
}

// parseFast reports whether b is exactly the canonical encoding of an
// AuditRecord, filling r. A false answer is not final: see the top.
func (d *parser) parseFast(b []byte, r *lineRec) bool {
	r.x = &d.extra
	i := lit(b, 0, `{"seq":`)
	r.seq, i = num(b, i)
	i = lit(b, i, `,"time":`)
	r.time, i = d.timestamp(b, i)
	i = lit(b, i, `,"prev":`)
	i = hashInto(b, i, &r.prevHash)
	i = lit(b, i, `,"event":{"type":`)
	k, i := enum(b, i, eventNames)
	if i < 0 {
		return false
	}
	r.kind = eventKind(k + 1)
	switch r.kind {
	case evDecision:
		i = parseDecision(b, i, r)
	case evApproval:
		i = parseApproval(b, i, r)
	case evResult:
		i = parseResult(b, i, r)
	case evRecovery:
		i = lit(b, i, `,"torn_bytes":`)
		r.n, i = num(b, i)
		i = lit(b, i, `,"torn_sha256":`)
		i = hashField(b, i, r, false)
	case evBreak:
		i = lit(b, i, `,"file":`)
		s, e, esc, j := str(b, i)
		if j < 0 {
			return false
		}
		r.file = unquote(b[s:e], esc)
		i = lit(b, j, `,"line":`)
		r.n, i = num(b, i)
		i = lit(b, i, `,"last_good":`)
		i = hashField(b, i, r, false)
	case evHead:
		i = lit(b, i, `,"problem":`)
		r.x.enum1, i = enum(b, i, problemNames)
		i = lit(b, i, `,"head_seq":`)
		if r.x.nullN, i = null(b, i); !r.x.nullN {
			r.n, i = num(b, i)
		}
		i = lit(b, i, `,"head_sha256":`)
		i = hashField(b, i, r, true)
	default:
		i = d.parseJobEvent(b, i, r)
	}
	return lit(b, i, "}}") == len(b)
}

func parseDecision(b []byte, i int, r *lineRec) int {
	i = sessionCall(b, i, r)
	i = lit(b, i, `,"tool":`)
	i = strField(b, i, &r.x.strs[0], false)
	i = lit(b, i, `,"arguments":`)
	i = strField(b, i, &r.x.strs[1], false)
	i = lit(b, i, `,"outcome":`)
	i = outcome(b, i, r)
	i = lit(b, i, `,"grant":`)
	i = strField(b, i, &r.x.strs[2], true)
	i = lit(b, i, `,"grant_sha256":`)
	i = hashField(b, i, r, true)
	i = lit(b, i, `,"taint":`)
	r.x.enum2, i = enum(b, i, classNames)
	i = lit(b, i, `,"untrusted":`)
	r.x.untrusted, i = boolean(b, i)
	return i
}

func parseApproval(b []byte, i int, r *lineRec) int {
	i = sessionCall(b, i, r)
	i = lit(b, i, `,"decision":`)
	r.x.decision, i = num(b, i)
	i = lit(b, i, `,"answer":`)
	r.x.enum1, i = enum(b, i, answerNames)
	i = lit(b, i, `,"by":`)
	i = strField(b, i, &r.x.strs[0], true)
	i = lit(b, i, `,"post":`)
	i = strField(b, i, &r.x.strs[1], true)
	i = lit(b, i, `,"reason":`)
	i = strField(b, i, &r.x.strs[2], true)
	i = lit(b, i, `,"outcome":`)
	return outcome(b, i, r)
}

func parseResult(b []byte, i int, r *lineRec) int {
	i = sessionCall(b, i, r)
	i = lit(b, i, `,"decision":`)
	r.x.decision, i = num(b, i)
	i = lit(b, i, `,"status":`)
	r.x.enum1, i = enum(b, i, statusNames)
	i = lit(b, i, `,"class":`)
	r.x.enum2, i = enum(b, i, classNames)
	i = lit(b, i, `,"untrusted":`)
	r.x.untrusted, i = boolean(b, i)
	i = lit(b, i, `,"truncated":`)
	r.x.truncated, i = boolean(b, i)
	i = lit(b, i, `,"bytes":`)
	r.n, i = num(b, i)
	i = lit(b, i, `,"sha256":`)
	i = hashField(b, i, r, false)
	i = lit(b, i, `,"taint_after":`)
	r.x.enum3, i = enum(b, i, classNames)
	return i
}

// sessionCall reads `,"session":"<id>","call":<n>`, the start of three events.
func sessionCall(b []byte, i int, r *lineRec) int {
	i = sessionField(b, i, r)
	i = lit(b, i, `,"call":`)
	r.call, i = num(b, i)
	return i
}

// sessionField reads `,"session":"<id>"`.
func sessionField(b []byte, i int, r *lineRec) int {
	i = lit(b, i, `,"session":"`)
	if i < 0 {
		return -1
	}
	// wire.ValidID: 1 to 64 characters of [a-z0-9-].
	j := i
	for j < len(b) && j-i <= 64 && idChar[b[j]] {
		j++
	}
	if j == i || j-i > 64 {
		return -1
	}
	r.session = b[i:j]
	return lit(b, j, `"`)
}

var idChar = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['-'] = true
	return t
}()

// outcome reads a DecisionRecord object.
func outcome(b []byte, i int, r *lineRec) int {
	i = lit(b, i, `{"outcome":`)
	r.outcome, i = enum(b, i, outcomeNames)
	if i >= 0 && r.outcome == outcomeDenied {
		i = lit(b, i, `,"reason":`)
		r.x.reason, i = enum(b, i, denyReasonNames)
	}
	return lit(b, i, "}")
}

func strField(b []byte, i int, s *span, nullable bool) int {
	if nullable {
		if s.null, i = null(b, i); s.null {
			return i
		}
	}
	s.start, s.end, s.esc, i = str(b, i)
	return i
}

func hashField(b []byte, i int, r *lineRec, nullable bool) int {
	r.hash = nil
	if nullable {
		var isNull bool
		if isNull, i = null(b, i); isNull {
			return i
		}
	}
	h, i := hash(b, i)
	if i >= 0 {
		r.hash = b[h : h+64]
	}
	return i
}

// unquote decodes the contents of a string str accepted.
func unquote(s []byte, esc bool) string {
	if !esc {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			out = utf8.AppendRune(out, rune(hexVal(s[i+3])<<4|hexVal(s[i+4])))
			i += 4
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

// parseLine parses one line: fast, or, if parseFast refuses it, with
// wire.Unmarshal, whose verdict is final (slow reports that it was needed).
func parseLine(d *parser, b []byte, r *lineRec) (ok bool, why string, slow bool) {
	if d.parseFast(b, r) {
		return true, "", false
	}
	var rec wire.AuditRecord
	if err := wire.Unmarshal(b, &rec); err != nil {
		return false, err.Error(), false
	}
	fromRecord(&rec, r)
	return true, "", true
}

// fromRecord fills r from a record wire.Unmarshal accepted, for the lines
// parseFast refused (none, if parseFast is right).
func fromRecord(rec *wire.AuditRecord, r *lineRec) {
	*r = lineRec{seq: rec.Seq, time: rec.Time, prevHash: rec.Prev}
	switch ev := rec.Event.(type) {
	case wire.DecisionEvent:
		r.kind, r.session, r.call = evDecision, []byte(ev.Session.String()), uint64(ev.Call)
		if _, ok := ev.Outcome.(wire.OutcomeAsk); ok {
			r.outcome = outcomeAsk
		}
	case wire.ApprovalEvent:
		r.kind, r.session, r.call = evApproval, []byte(ev.Session.String()), uint64(ev.Call)
	case wire.ResultEvent:
		r.kind, r.session, r.call = evResult, []byte(ev.Session.String()), uint64(ev.Call)
	case wire.RecoveryEvent:
		r.kind, r.n, r.hash = evRecovery, ev.TornBytes, hexOf(ev.TornSha256)
	case wire.AcceptedBreakEvent:
		r.kind, r.n, r.file, r.hash = evBreak, ev.Line, ev.File, hexOf(ev.LastGood)
	case wire.AcceptedHeadEvent:
		r.kind = evHead
	case wire.NotePromotedEvent:
		r.kind = evNotePromoted
	case wire.NoteDeletedEvent:
		r.kind = evNoteDeleted
	case wire.JobStartedEvent:
		r.kind, r.session, r.hash = evJobStarted, []byte(ev.Session.String()), hexOf(ev.JobSha256)
	case wire.JobSkippedEvent:
		r.kind = evJobSkipped
	case wire.JobEndedEvent:
		r.kind, r.session = evJobEnded, []byte(ev.Session.String())
	}
}

func hexOf(h wire.Hash32) []byte { return hex.AppendEncode(nil, h[:]) }
