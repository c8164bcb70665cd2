package audit

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"

	"boxmaker/wire"
)

// ChainVerifier decides what a sequence of audit log lines means (M3a §5,
// "Verification"). It does no I/O: feed it File, then each Line of that file,
// for every file in name order, then call Finish.
//
// It judges each line one line late, because a torn line is only known to be
// recovered when the next line, a matching Recovery record, arrives.
type ChainVerifier struct {
	dates  parser
	file   string
	lineNo uint64

	// What the next line of an intact chain must carry.
	expSeq   uint64
	prevHash wire.Hash32
	haveHead bool
	lastTime wire.Timestamp
	haveTime bool

	// The last line fed, whatever it held.
	lastHash wire.Hash32
	lastLoc  Location
	haveLast bool

	// A broken stretch: the first failure since the start or the last
	// accepted break, the seq expected there, and the highest seq of a line
	// that parsed since.
	failure *ChainFailure
	failSeq uint64
	maxSeq  uint64
	haveMax bool

	pend    verdict
	hasPend bool
	scratch prepared // for Line; VerifyDir prepares lines elsewhere

	asks map[string]uint64 // session/call of each Ask decision not yet approved
	rep  ChainReport

	// watch holds the seqs whose records' hashes are compared with a head:
	// the one brokerd keeps, and one the owner kept off the host.
	watch []uint64
}

// verdict is a line judged but not yet applied to the state.
type verdict struct {
	loc     Location
	hash    wire.Hash32
	before  wire.Hash32 // hash of the line before it
	size    uint64
	newline bool
	// tornable: no newline, and the caller said it ends its file; a torn
	// tail if nothing follows.
	tornable bool
	parsed   bool
	seq      uint64
	time     wire.Timestamp
	ask      bool   // an Ask decision (else key, if set, is an Approval's)
	key      []byte // session and call of an Ask decision or an Approval
	fail     string // why it breaks an intact chain, if it does
	accepts  bool   // an AcceptedBreak accepting the current failure
	head     bool   // an AcceptedHead record
}

// NewChainVerifier expects the first record ever: seq 0, prev all zeros.
func NewChainVerifier() *ChainVerifier {
	return &ChainVerifier{asks: map[string]uint64{}}
}

// ResumeChainVerifier continues from a known point: the next line must have
// seq nextSeq and prev prev.
func ResumeChainVerifier(nextSeq uint64, prev wire.Hash32) *ChainVerifier {
	v := NewChainVerifier()
	v.expSeq, v.prevHash, v.haveHead, v.lastHash = nextSeq, prev, true, prev
	return v
}

// watchSeq makes the report say where the record with each of these seqs
// is and what it hashes to, if it is part of the chain.
func (v *ChainVerifier) watchSeq(seqs ...uint64) {
	v.watch = append(v.watch, seqs...)
}

// File starts the next file; name is its base name.
func (v *ChainVerifier) File(name string) {
	v.file, v.lineNo = name, 0
}

// Line feeds the next line of the current file, without its newline. b is
// not kept after Line returns.
func (v *ChainVerifier) Line(b []byte, lastInFile, hasNewline bool) {
	v.scratch.prepare(&v.dates, b)
	v.take(&v.scratch, lastInFile, hasNewline)
}

// take feeds a line already hashed and parsed (VerifyDir does that on
// several cores).
func (v *ChainVerifier) take(l *prepared, lastInFile, hasNewline bool) {
	v.lineNo++
	if l.slow {
		v.rep.slow++
	}
	loc := Location{v.file, v.lineNo}
	r := &l.rec
	if v.hasPend {
		if l.parsed && r.kind == evRecovery && v.recovers(l) {
			v.rep.Recoveries = append(v.rep.Recoveries, v.pend.loc)
		} else {
			v.commit()
		}
		v.hasPend = false
	}
	v.judge(loc, l, hasNewline, lastInFile)
	v.lastHash, v.lastLoc, v.haveLast = l.hash, loc, true
}

// recovers reports whether Recovery record r describes the pending line
// exactly and chains from the line before it. The spec speaks of a line that
// does not parse; a torn write can also stop just short of the newline,
// leaving a whole record, which startup treats as torn all the same (its
// caller never heard back), so the rule is applied whether it parses or not.
func (v *ChainVerifier) recovers(l *prepared) bool {
	p, r := &v.pend, &l.rec
	return v.failure == nil && p.newline && r.n == p.size && hexIs(r.hash, p.hash) &&
		r.seq == v.expSeq && r.prevHash == v.prevHash
}

// judge holds the line as pending, with what applying it will mean.
func (v *ChainVerifier) judge(loc Location, l *prepared, newline, lastInFile bool) {
	p, r, parsed := &v.pend, &l.rec, l.parsed
	*p = verdict{loc: loc, hash: l.hash, before: v.lastHash, size: l.size, newline: newline,
		tornable: !newline && lastInFile, parsed: parsed, key: p.key[:0]}
	v.hasPend = true
	if parsed {
		p.seq, p.time = r.seq, r.time
	}
	if v.failure != nil {
		p.accepts = parsed && r.kind == evBreak && v.acceptsFailure(l)
		return
	}
	switch {
	case !newline:
		p.fail = "the line has no newline and is not the last line of the log"
	case !parsed:
		p.fail = "not an audit record: " + l.why
	case r.seq != v.expSeq:
		p.fail = fmt.Sprintf("seq is %d, expected %d", r.seq, v.expSeq)
	case r.prevHash != v.prevHash:
		p.fail = v.prevMismatch()
	case r.kind == evBreak:
		p.fail = fmt.Sprintf("an accepted break names %s:%d, but the chain is not broken there", r.file, r.n)
	case r.kind == evDecision && r.outcome == outcomeAsk:
		p.ask, p.key = true, appendKey(p.key, r.session, r.call)
	case r.kind == evApproval:
		p.key = appendKey(p.key, r.session, r.call)
	case r.kind == evHead:
		p.head = true
	}
}

func (v *ChainVerifier) prevMismatch() string {
	switch {
	case !v.haveLast && !v.haveHead:
		return "prev of the first record is not all zeros"
	case !v.haveLast:
		return "prev is not the hash of the line it resumes from"
	case v.lastLoc.File != v.file:
		return "prev is not the hash of the last line of " + v.lastLoc.File
	}
	return fmt.Sprintf("prev is not the hash of line %d", v.lastLoc.Line)
}

// acceptsFailure reports whether AcceptedBreak record r accepts the current
// failure: it names it, and carries what startup writes (last_good the last
// line that verified, prev the line before it, seq past every seq since).
func (v *ChainVerifier) acceptsFailure(l *prepared) bool {
	r := &l.rec
	seq, ok := v.breakSeq()
	return ok && r.file == v.failure.File && r.n == v.failure.Line && hexIs(r.hash, v.failure.LastGood) &&
		r.prevHash == v.lastHash && r.seq == seq
}

// breakSeq is the seq an AcceptedBreak must take now: one more than the
// highest seq among lines that parsed since the failure (the failure line
// included), or the seq the failure line should have had if none did.
func (v *ChainVerifier) breakSeq() (uint64, bool) {
	if !v.haveMax {
		return v.failSeq, true
	}
	return v.maxSeq + 1, v.maxSeq != math.MaxUint64
}

// commit applies the pending line to the state.
func (v *ChainVerifier) commit() {
	p := &v.pend
	switch {
	case v.failure != nil && p.accepts:
		v.rep.AcceptedBreaks = append(v.rep.AcceptedBreaks, v.failure.Location)
		v.failure, v.haveMax = nil, false
		v.advance(p)
	case v.failure != nil:
		if p.parsed && (!v.haveMax || p.seq > v.maxSeq) {
			v.maxSeq, v.haveMax = p.seq, true
		}
	case p.fail != "":
		v.failure = &ChainFailure{Location: p.loc, What: p.fail, LastGood: v.prevHash}
		v.failSeq, v.maxSeq, v.haveMax = v.expSeq, p.seq, p.parsed
	default:
		if v.haveTime && p.time < v.lastTime {
			v.rep.ClockWarnings = append(v.rep.ClockWarnings, p.loc)
		}
		v.advance(p)
		if p.head {
			v.rep.AcceptedHeads = append(v.rep.AcceptedHeads, p.loc)
		}
		switch {
		case p.ask:
			v.asks[string(p.key)] = p.seq
		case len(p.key) > 0:
			delete(v.asks, string(p.key))
		}
	}
}

// advance makes the pending line the head of the chain.
func (v *ChainVerifier) advance(p *verdict) {
	for _, seq := range v.watch {
		if p.seq == seq {
			// Seqs only grow along the chain: each is found at most once.
			v.rep.watched = append(v.rep.watched, watched{seq: seq, loc: p.loc, hash: p.hash})
		}
	}
	v.rep.Records++
	v.prevHash, v.expSeq, v.haveHead = p.hash, p.seq+1, true
	v.lastTime, v.haveTime = p.time, true
}

// Finish judges the last line and reports.
func (v *ChainVerifier) Finish() ChainReport {
	if v.hasPend {
		p := &v.pend
		if !p.tornable {
			v.commit()
		} else {
			loc := p.loc
			v.rep.TornTail = &loc
			v.rep.torn = tornInfo{bytes: p.size, sha: p.hash, prev: p.before, seq: v.expSeq}
			if v.failure != nil {
				v.rep.torn.seq, _ = v.breakSeq()
			}
		}
		v.hasPend = false
	}
	rep := v.rep
	if v.haveHead {
		h := v.prevHash
		rep.Head = &h
	}
	rep.NextSeq = v.expSeq
	if v.failure != nil {
		f := *v.failure
		rep.Failure = &f
		rep.brk.seq, rep.brk.ok = v.breakSeq()
		rep.brk.prev = v.lastHash
	}
	for _, seq := range v.asks {
		rep.Abandoned = append(rep.Abandoned, seq)
	}
	slices.Sort(rep.Abandoned)
	return rep
}

func appendKey(dst, session []byte, call uint64) []byte {
	dst = append(dst, session...)
	dst = append(dst, '/')
	return strconv.AppendUint(dst, call, 10)
}

// hexIs reports whether s is the lowercase hex of h.
func hexIs(s []byte, h wire.Hash32) bool {
	var buf [64]byte
	hex.Encode(buf[:], h[:])
	return string(s) == string(buf[:])
}
