package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// postedChain is a log whose line 2 breaks the chain (seq 5, expected 1),
// accepted by line 3 (seq 6), then one more record (seq 7): seqs 1 to 5 are
// not records of the chain.
func postedChain(t *testing.T) ([]fline, [4]wire.Hash32) {
	f := newForge(t)
	a := f.next(someEvent)
	bad := f.at(5, wire.Hash32{}, someEvent)
	brk := f.at(6, wire.Sha256(bad), wire.AcceptedBreakEvent{File: f1, Line: 2, LastGood: wire.Sha256(a)})
	c := f.next(someEvent)
	return inFile(f1, a, bad, brk, c), [4]wire.Hash32{wire.Sha256(a), wire.Sha256(bad), wire.Sha256(brk), wire.Sha256(c)}
}

// TestComparePosted: every way a posted head can agree or disagree with a
// chain, judged on the report of a verifier that watched its seq.
func TestComparePosted(t *testing.T) {
	lines, h := postedChain(t)
	other := wire.Sha256([]byte("other"))
	for _, tc := range []struct {
		name   string
		lines  []fline
		posted wire.AuditHead
		want   string // "" when it matches
	}{
		{"first record", lines, wire.AuditHead{Seq: 0, Hash: h[0]}, ""},
		{"the accepted break", lines, wire.AuditHead{Seq: 6, Hash: h[2]}, ""},
		{"the last record", lines, wire.AuditHead{Seq: 7, Hash: h[3]}, ""},
		{"hash differs", lines, wire.AuditHead{Seq: 7, Hash: other},
			"record 7 (" + f1 + ":4) hashes to " + h[3].String() + ", but the posted head says " + other.String()},
		{"another record's hash", lines, wire.AuditHead{Seq: 6, Hash: h[3]},
			"record 6 (" + f1 + ":3) hashes to " + h[2].String() + ", but the posted head says " + h[3].String()},
		{"inside the broken stretch", lines, wire.AuditHead{Seq: 3, Hash: h[1]},
			"the chain holds no record 3, which the posted head names (" + h[1].String() + ")"},
		{"the broken line's own seq", lines, wire.AuditHead{Seq: 5, Hash: h[1]},
			"the chain holds no record 5, which the posted head names (" + h[1].String() + ")"},
		{"beyond the end", lines, wire.AuditHead{Seq: 8, Hash: h[3]},
			"the log ends before record 8, which the posted head names (" + h[3].String() + "); its next seq is 8"},
		{"empty log", nil, wire.AuditHead{Seq: 0, Hash: h[0]},
			"the log has no records, but the posted head names record 0 (" + h[0].String() + ")"},
		{"an unaccepted break", lines[:2], wire.AuditHead{Seq: 5, Hash: h[1]},
			"the chain holds no record 5, which the posted head names (" + h[1].String() + "): it does not verify past " + f1 + ":2"},
		{"before an unaccepted break", lines[:2], wire.AuditHead{Seq: 0, Hash: h[0]}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewChainVerifier()
			v.watchSeq(tc.posted.Seq)
			err := comparePosted(tc.posted, feed(v, tc.lines))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
				return
			case err == nil:
				t.Fatalf("accepted; want %q", tc.want)
			case err.What != tc.want || err.Posted != tc.posted || !errors.Is(err, ErrHeadMismatch) ||
				err.Error() != "audit: "+tc.want+"\nsee docs/runbook.md#audit-head-posted-mismatch":
				t.Fatalf("got %q\nwant %q", err.Error(), tc.want)
			}
		})
	}
}

// TestWatchTwoSeqs: the verifier finds every seq it watches, each with the
// SHA-256 of its own line (what the next line's prev holds), and no other.
func TestWatchTwoSeqs(t *testing.T) {
	f := newForge(t)
	var lines [][]byte
	for range 6 {
		lines = append(lines, f.next(someEvent))
	}
	v := NewChainVerifier()
	v.watchSeq(4, 1, 9)
	rep := feed(v, inFile(f1, lines...))
	for seq := range uint64(10) {
		w := rep.found(seq)
		switch {
		case seq == 1 || seq == 4:
			if w == nil || w.hash != wire.Sha256(lines[seq]) || w.loc != (Location{f1, seq + 1}) {
				t.Fatalf("seq %d: %+v", seq, w)
			}
		case w != nil:
			t.Fatalf("seq %d was not watched, or is not in the log: %+v", seq, w)
		}
	}
}

// TestVerifyDirPosted: both heads judged on one reading of the log, each
// by its own rule: brokerd's head file must name the record it names, the
// posted head may name any record of the chain.
func TestVerifyDirPosted(t *testing.T) {
	home := t.TempDir()
	dir, headFile := filepath.Join(home, "audit"), filepath.Join(home, "broker", "audit-head")
	w, _, err := Open(dir, Options{HeadFile: headFile, Now: newClock(day0).Now})
	if err != nil {
		t.Fatal(err)
	}
	var entries []Entry
	for range 3 {
		e, err := w.AppendEntry(someEvent)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		rep, herr, perr, err := VerifyDirPosted(dir, headFile, wire.AuditHead{Seq: e.Seq, Hash: e.Hash})
		if err != nil || herr != nil || perr != nil || rep.Records != 3 {
			t.Fatalf("seq %d: %v %v %v %+v", e.Seq, err, herr, perr, rep)
		}
	}
	// The head file cut back to record 1: it still names a record of the
	// chain, so only the posted head of record 2 with record 1's hash
	// disagrees.
	if err := os.WriteFile(headFile, appendHead(nil, Head{Next: 2, Hash: entries[1].Hash}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, herr, perr, err := VerifyDirPosted(dir, headFile, wire.AuditHead{Seq: 2, Hash: entries[1].Hash})
	if err != nil || herr != nil || perr == nil || !strings.HasPrefix(perr.What, "record 2 (") {
		t.Fatalf("%v %v %v", err, herr, perr)
	}
	// A head file naming a record the log lacks is its own error, beside
	// the posted head's verdict.
	if err := os.WriteFile(headFile, appendHead(nil, Head{Next: 9, Hash: entries[2].Hash}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, herr, perr, err = VerifyDirPosted(dir, headFile, wire.AuditHead{Seq: 2, Hash: entries[2].Hash})
	if err != nil || herr == nil || herr.Problem != wire.HeadBeyondLog || perr != nil {
		t.Fatalf("%v %v %v", err, herr, perr)
	}
	// No log directory: an error, not a verdict.
	if _, _, _, err := VerifyDirPosted(filepath.Join(home, "none"), headFile, wire.AuditHead{}); err == nil {
		t.Fatal("no error for a missing directory")
	}
}
