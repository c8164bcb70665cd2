package audit

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"boxmaker/wire"
)

func TestVerifyEmpty(t *testing.T) {
	rep := NewChainVerifier().Finish()
	if rep.Records != 0 || rep.Head != nil || rep.NextSeq != 0 || rep.Failure != nil {
		t.Fatalf("%+v", rep)
	}
	if got := formatted(t, rep); got != "audit: ok, 0 records, head none\n" {
		t.Fatalf("%q", got)
	}
}

func TestVerifyIntactAcrossFiles(t *testing.T) {
	f := newForge(t)
	lines := inFile(f1, f.next(someEvent), f.next(someEvent), f.next(someEvent))
	last := f.next(someEvent)
	lines = append(lines, inFile(f2, last)...)
	rep := feed(NewChainVerifier(), lines)
	h := wire.Sha256(last)
	if rep.Failure != nil || rep.Records != 4 || rep.NextSeq != 4 || *rep.Head != h {
		t.Fatalf("%+v", rep)
	}
}

// failureAt checks that the report's failure is at file:line and says what.
func failureAt(t *testing.T, rep ChainReport, file string, line uint64, what string) {
	t.Helper()
	f := rep.Failure
	if f == nil || f.File != file || f.Line != line || !strings.Contains(f.What, what) {
		t.Fatalf("failure %+v, want %s:%d: %s", f, file, line, what)
	}
}

func TestVerifyFailures(t *testing.T) {
	var zero wire.Hash32
	cases := []struct {
		name  string
		lines func(f *forge) []fline
		file  string
		line  uint64
		what  string
	}{
		{"first seq not 0", func(f *forge) []fline { return inFile(f1, f.at(1, zero, someEvent)) },
			f1, 1, "seq is 1, expected 0"},
		{"first prev not zero", func(f *forge) []fline { return inFile(f1, f.at(0, wire.Sha256(nil), someEvent)) },
			f1, 1, "prev of the first record is not all zeros"},
		{"not a record", func(f *forge) []fline { return inFile(f1, f.next(someEvent), []byte(`{"seq":1}`)) },
			f1, 2, "not an audit record: wire:"},
		{"empty line", func(f *forge) []fline { return inFile(f1, f.next(someEvent), nil, f.next(someEvent)) },
			f1, 2, "not an audit record"},
		{"seq gap", func(f *forge) []fline {
			a := f.next(someEvent)
			return inFile(f1, a, f.at(2, wire.Sha256(a), someEvent))
		}, f1, 2, "seq is 2, expected 1"},
		{"prev mismatch", func(f *forge) []fline {
			return inFile(f1, f.next(someEvent), f.next(someEvent), f.at(2, zero, someEvent))
		}, f1, 3, "prev is not the hash of line 2"},
		{"file does not chain", func(f *forge) []fline {
			return append(inFile(f1, f.next(someEvent)), inFile(f2, f.at(1, zero, someEvent))...)
		}, f2, 1, "prev is not the hash of the last line of " + f1},
		{"no newline mid-log", func(f *forge) []fline {
			l := []fline{{f1, f.next(someEvent), false}}
			return append(l, inFile(f2, f.next(someEvent))...)
		}, f1, 1, "no newline"},
		{"break with nothing broken", func(f *forge) []fline {
			return inFile(f1, f.next(someEvent), f.next(wire.AcceptedBreakEvent{File: f1, Line: 1}))
		}, f1, 2, "the chain is not broken there"},
		{"lines after a failure are not checked", func(f *forge) []fline {
			return inFile(f1, f.next(someEvent), []byte("junk"), []byte("more junk"), f.at(9, zero, someEvent))
		}, f1, 2, "not an audit record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := feed(NewChainVerifier(), c.lines(newForge(t)))
			failureAt(t, rep, c.file, c.line, c.what)
			if got, want := formatted(t, rep), rep.Failure.String()+"\n"; !strings.HasPrefix(got, want) {
				t.Fatalf("formatted %q, want it to start %q", got, want)
			}
		})
	}
}

func TestVerifyTornTail(t *testing.T) {
	f := newForge(t)
	a, b := f.next(someEvent), f.next(someEvent)
	torn := f.next(someEvent)
	lines := append(inFile(f1, a, b), fline{f1, torn[:len(torn)/2], false})
	rep := feed(NewChainVerifier(), lines)
	if rep.Failure != nil || rep.TornTail == nil || *rep.TornTail != (Location{f1, 3}) ||
		rep.Records != 2 || rep.NextSeq != 2 || *rep.Head != wire.Sha256(b) {
		t.Fatalf("%+v", rep)
	}
	if rep.torn.prev != wire.Sha256(b) || rep.torn.seq != 2 || rep.torn.bytes != uint64(len(torn)/2) {
		t.Fatalf("torn %+v", rep.torn)
	}
	// A complete record without its newline is a torn tail too.
	rep = feed(NewChainVerifier(), append(inFile(f1, a, b), fline{f1, torn, false}))
	if rep.Failure != nil || rep.TornTail == nil || rep.Records != 2 {
		t.Fatalf("%+v", rep)
	}
}

// recovered is lines: a, a torn line (completed with a newline), the Recovery
// record for it, and one more record.
func recovered(t *testing.T, torn func(full []byte) []byte, rec func(torn []byte) wire.RecoveryEvent) []fline {
	f := newForge(t)
	a := f.next(someEvent)
	tb := torn(f.next(someEvent))
	f.after(0, a)
	r := f.next(rec(tb))
	return inFile(f1, a, tb, r, f.next(someEvent))
}

func exact(tb []byte) wire.RecoveryEvent {
	return wire.RecoveryEvent{TornBytes: uint64(len(tb)), TornSha256: wire.Sha256(tb)}
}

func TestVerifyRecovered(t *testing.T) {
	for name, torn := range map[string]func([]byte) []byte{
		"cut":      func(b []byte) []byte { return b[:17] },
		"complete": func(b []byte) []byte { return b },
	} {
		t.Run(name, func(t *testing.T) {
			rep := feed(NewChainVerifier(), recovered(t, torn, exact))
			if rep.Failure != nil || !slices.Equal(rep.Recoveries, []Location{{f1, 2}}) || rep.Records != 3 || rep.NextSeq != 3 {
				t.Fatalf("%+v %v", rep, rep.Failure)
			}
			if got := formatted(t, rep); !strings.Contains(got, "\nrecovered: "+f1+":2\n") {
				t.Fatalf("%q", got)
			}
		})
	}
	cut := func(b []byte) []byte { return b[:17] }
	for name, rec := range map[string]func([]byte) wire.RecoveryEvent{
		"wrong length": func(tb []byte) wire.RecoveryEvent { r := exact(tb); r.TornBytes++; return r },
		"wrong hash":   func(tb []byte) wire.RecoveryEvent { r := exact(tb); r.TornSha256[0]++; return r },
	} {
		t.Run(name, func(t *testing.T) {
			failureAt(t, feed(NewChainVerifier(), recovered(t, cut, rec)), f1, 2, "not an audit record")
		})
	}
}

// broken is a log whose line 3 was changed (so line 4 fails), followed by
// an AcceptedBreak record made by brk and one more record.
func broken(t *testing.T, brk func(fail Location, lastGood, prev wire.Hash32, seq uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent)) []fline {
	f := newForge(t)
	a, b, c, d := f.next(someEvent), f.next(someEvent), f.next(someEvent), f.next(someEvent)
	c = bytes.Replace(c, []byte(`"torn_bytes":1`), []byte(`"torn_bytes":2`), 1) // still parses
	// Line 3 verifies, changed as it is: line 4 is where the chain breaks.
	seq, prev, ev := brk(Location{f1, 4}, wire.Sha256(c), wire.Sha256(d), 4)
	e := f.at(seq, prev, ev)
	return inFile(f1, a, b, c, d, e, f.next(someEvent))
}

func TestVerifyAcceptedBreak(t *testing.T) {
	good := func(fail Location, lastGood, prev wire.Hash32, seq uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent) {
		return seq, prev, wire.AcceptedBreakEvent{File: fail.File, Line: fail.Line, LastGood: lastGood}
	}
	rep := feed(NewChainVerifier(), broken(t, good))
	if rep.Failure != nil || !slices.Equal(rep.AcceptedBreaks, []Location{{f1, 4}}) || rep.NextSeq != 6 || rep.Records != 5 {
		t.Fatalf("%+v %v", rep, rep.Failure)
	}
	if got := formatted(t, rep); !strings.Contains(got, "\naccepted break: "+f1+":4\n") {
		t.Fatalf("%q", got)
	}
	bad := map[string]func(Location, wire.Hash32, wire.Hash32, uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent){
		"wrong line": func(l Location, g, p wire.Hash32, s uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent) {
			l.Line = 3
			return good(l, g, p, s)
		},
		"wrong file": func(l Location, g, p wire.Hash32, s uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent) {
			l.File = f2
			return good(l, g, p, s)
		},
		"wrong last_good": func(l Location, g, p wire.Hash32, s uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent) {
			return good(l, p, p, s)
		},
		"wrong prev": func(l Location, g, p wire.Hash32, s uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent) {
			return good(l, g, g, s)
		},
		"wrong seq": func(l Location, g, p wire.Hash32, s uint64) (uint64, wire.Hash32, wire.AcceptedBreakEvent) {
			return good(l, g, p, s+1)
		},
	}
	for name, brk := range bad {
		t.Run(name, func(t *testing.T) {
			failureAt(t, feed(NewChainVerifier(), broken(t, brk)), f1, 4, "prev is not the hash of line 3")
		})
	}
}

func TestVerifySecondBreakNeedsItsOwnRecord(t *testing.T) {
	f := newForge(t)
	a := f.next(someEvent)
	bad := f.at(5, wire.Hash32{}, someEvent) // line 2 fails: seq 5
	brk := f.at(6, wire.Sha256(bad), wire.AcceptedBreakEvent{File: f1, Line: 2, LastGood: wire.Sha256(a)})
	c := f.next(someEvent)
	bad2 := f.at(100, wire.Sha256(c), someEvent) // line 5 fails: seq 100
	rep := feed(NewChainVerifier(), inFile(f1, a, bad, brk, c, bad2))
	failureAt(t, rep, f1, 5, "seq is 100, expected 8")
	if !slices.Equal(rep.AcceptedBreaks, []Location{{f1, 2}}) {
		t.Fatalf("%v", rep.AcceptedBreaks)
	}
}

func TestVerifyClockWarnings(t *testing.T) {
	f := newForge(t)
	a, b := f.next(someEvent), f.next(someEvent)
	f.ts -= 10
	c := f.next(someEvent)
	rep := feed(NewChainVerifier(), inFile(f1, a, b, c, f.next(someEvent)))
	if rep.Failure != nil || !slices.Equal(rep.ClockWarnings, []Location{{f1, 3}}) {
		t.Fatalf("%+v", rep)
	}
	if got := formatted(t, rep); !strings.Contains(got, "\nclock went backwards: "+f1+":3\n") {
		t.Fatalf("%q", got)
	}
}

func TestVerifyAbandoned(t *testing.T) {
	f := newForge(t)
	lines := inFile(f1,
		f.next(decision("chat-1", 1, wire.OutcomeAsk{})),     // 0: approved below
		f.next(decision("chat-1", 2, wire.OutcomeAsk{})),     // 1: abandoned
		f.next(decision("chat-2", 1, wire.OutcomeAsk{})),     // 2: abandoned (approval below is chat-1)
		f.next(decision("chat-1", 3, wire.OutcomeAllowed{})), // 3: not an ask
		f.next(approval("chat-1", 1, 0)),
		f.next(decision("chat-1", 4, wire.OutcomeAsk{})), // 5: abandoned
	)
	rep := feed(NewChainVerifier(), lines)
	if rep.Failure != nil || !slices.Equal(rep.Abandoned, []uint64{1, 2, 5}) {
		t.Fatalf("%+v", rep)
	}
	if got := formatted(t, rep); !strings.Contains(got, "\nabandoned approval: 1\nabandoned approval: 2\nabandoned approval: 5\n") {
		t.Fatalf("%q", got)
	}
}

func TestVerifyResume(t *testing.T) {
	f := newForge(t)
	a := f.next(someEvent)
	b := f.next(someEvent)
	rep := feed(ResumeChainVerifier(1, wire.Sha256(a)), inFile(f2, b))
	if rep.Failure != nil || rep.Records != 1 || rep.NextSeq != 2 || *rep.Head != wire.Sha256(b) {
		t.Fatalf("%+v", rep)
	}
	failureAt(t, feed(ResumeChainVerifier(1, wire.Hash32{}), inFile(f2, b)), f2, 1, "the line it resumes from")
	if rep := ResumeChainVerifier(7, wire.Sha256(a)).Finish(); *rep.Head != wire.Sha256(a) || rep.NextSeq != 7 {
		t.Fatalf("%+v", rep)
	}
}

func TestFormatEscapesWhat(t *testing.T) {
	rep := ChainReport{Failure: &ChainFailure{Location: Location{f1, 2}, What: "bad \x1b[31m\u009b"}}
	if got := formatted(t, rep); got != f1+":2: bad \\u001b[31m\\u009b\nsee docs/runbook.md#audit-chain-broken\n" {
		t.Fatalf("%q", got)
	}
}
