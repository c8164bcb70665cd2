package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// The tampering suite's logs (fixtures/audit/<case>/audit/*.jsonl) are made
// here: an intact log written by the real Writer over three days, then
// damaged one way per case. TestFixtures compares them byte for byte and,
// with -update, rewrites them.

// Days of the base log.
var fixDays = []time.Time{day0, day0.Add(24 * time.Hour), day0.Add(48 * time.Hour)}

const fixDay3 = "2026-09-19.jsonl"

// fixBase writes the intact log into dir: 4, 4 and 6 records.
func fixBase(t *testing.T, dir string) *clock {
	c := newClock(fixDays[0])
	w, _ := openT(t, dir, c, Options{})
	for _, ev := range []wire.AuditEvent{
		decision("chat-1", 1, wire.OutcomeAsk{}), approval("chat-1", 1, 0), result("chat-1", 1, 0),
		decision("chat-1", 2, wire.OutcomeAllowed{}),
	} {
		appendT(t, w, ev)
	}
	c.Set(fixDays[1])
	for _, ev := range []wire.AuditEvent{
		result("chat-1", 2, 3), decision("chat-2", 1, wire.OutcomeDenied{Reason: wire.NoGrant}),
		decision("chat-2", 2, wire.OutcomeAsk{}), // never approved
		decision("chat-1", 3, wire.OutcomeAllowed{}),
	} {
		appendT(t, w, ev)
	}
	c.Set(fixDays[2])
	for _, ev := range []wire.AuditEvent{
		result("chat-1", 3, 7), decision("chat-1", 4, wire.OutcomeAllowed{}), result("chat-1", 4, 9),
		decision("chat-1", 5, wire.OutcomeAllowed{}), result("chat-1", 5, 11), decision("chat-1", 6, wire.OutcomeAllowed{}),
	} {
		appendT(t, w, ev)
	}
	closeT(t, w)
	return c
}

// fixCase makes one case's log in dir.
type fixCase struct {
	name string
	make func(t *testing.T, dir string)
	// fail is where the chain breaks ("" if it verifies).
	fail string
}

var fixCases = []fixCase{
	{"intact", func(t *testing.T, dir string) { fixBase(t, dir) }, ""},
	{"changed-byte", changedByte, fixDay3 + ":3"},
	{"deleted-line", func(t *testing.T, dir string) {
		fixBase(t, dir)
		editLines(t, dir, fixDay3, func(l []string) []string { return append(l[:2:2], l[3:]...) })
	}, fixDay3 + ":3"},
	{"swapped-lines", func(t *testing.T, dir string) {
		fixBase(t, dir)
		editLines(t, dir, fixDay3, func(l []string) []string { l[2], l[3] = l[3], l[2]; return l })
	}, fixDay3 + ":3"},
	{"seq-gap", func(t *testing.T, dir string) {
		fixBase(t, dir)
		// Seq skips one from line 3 on; prev is made right, so only seq fails.
		editLines(t, dir, fixDay3, func(l []string) []string { return rechain(t, l, 2, hashOf(l[1]), 1) })
	}, fixDay3 + ":3"},
	{"file-not-chained", func(t *testing.T, dir string) {
		fixBase(t, dir)
		// The newest file chains from somewhere else (here: the start).
		editLines(t, dir, fixDay3, func(l []string) []string { return rechain(t, l, 0, wire.Hash32{}, 0) })
	}, fixDay3 + ":1"},
	{"cut-short", func(t *testing.T, dir string) {
		fixBase(t, dir)
		editLines(t, dir, fixDay3, func(l []string) []string { l[3] = l[3][:len(l[3])/2] + "\n"; return l })
	}, fixDay3 + ":4"},
	{"torn-tail", tornTail, ""},
	{"recovered", func(t *testing.T, dir string) {
		tornTail(t, dir)
		c := newClock(fixDays[2].Add(time.Hour))
		w, _ := openT(t, dir, c, Options{})
		appendT(t, w, decision("chat-1", 7, wire.OutcomeAllowed{}))
		closeT(t, w)
	}, ""},
	{"accepted-break", func(t *testing.T, dir string) {
		changedByte(t, dir)
		c := newClock(fixDays[2].Add(time.Hour))
		w, _ := openT(t, dir, c, Options{AcceptBreak: true})
		appendT(t, w, decision("chat-1", 7, wire.OutcomeAllowed{}))
		closeT(t, w)
	}, ""},
	{"accepted-head", func(t *testing.T, dir string) {
		// The last two records cut off: the rest still verifies, but not
		// against the head, and startup with AcceptBreak records that.
		fixBase(t, dir)
		rep := verifyOK(t, dir)
		f, err := createHead(filepath.Join(filepath.Dir(dir), "broker", "audit-head"), Head{Next: rep.NextSeq, Hash: *rep.Head})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		editLines(t, dir, fixDay3, func(l []string) []string { return l[:len(l)-2] })
		c := newClock(fixDays[2].Add(time.Hour))
		w, _ := openT(t, dir, c, Options{AcceptBreak: true, HeadFile: filepath.Join(filepath.Dir(dir), "broker", "audit-head")})
		appendT(t, w, decision("chat-1", 7, wire.OutcomeAllowed{}))
		closeT(t, w)
	}, ""},
	{"break-wrong-line", func(t *testing.T, dir string) {
		changedByte(t, dir)
		rep, err := VerifyDir(dir)
		if err != nil || rep.Failure == nil {
			t.Fatalf("%v %+v", err, rep)
		}
		// Everything as startup would write it, but naming line 2.
		editLines(t, dir, fixDay3, func(l []string) []string {
			return append(l, line(t, rep.brk.seq, rep.brk.prev, fixDays[2].Add(time.Hour),
				wire.AcceptedBreakEvent{File: fixDay3, Line: 2, LastGood: rep.Failure.LastGood}))
		})
	}, fixDay3 + ":3"},
	{"clock-backwards", func(t *testing.T, dir string) {
		c := fixBase(t, dir)
		c.Set(fixDays[2].Add(-time.Minute)) // still the third day
		w, _ := openT(t, dir, c, Options{})
		appendT(t, w, result("chat-1", 6, 13))
		closeT(t, w)
	}, ""},
}

// changedByte edits a middle line of the newest file so that it still parses
// and chains from the line before: the next line is where the chain breaks.
func changedByte(t *testing.T, dir string) {
	fixBase(t, dir)
	editLines(t, dir, fixDay3, func(l []string) []string {
		l[1] = strings.Replace(l[1], "notes/4.md", "notes/5.md", 1)
		return l
	})
}

// tornTail cuts the last line of the log short, without its newline.
func tornTail(t *testing.T, dir string) {
	fixBase(t, dir)
	editLines(t, dir, fixDay3, func(l []string) []string { l[5] = l[5][:len(l[5])/2]; return l })
}

// editLines rewrites one file of the log through edit, which gets and
// returns its lines, each with its newline.
func editLines(t *testing.T, dir, name string, edit func([]string) []string) {
	t.Helper()
	path := filepath.Join(dir, name)
	lines := readLines(t, path)
	lines = edit(lines[:len(lines)-1])
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// rechain rewrites lines[from:] to chain from prev, adding delta to seq.
func rechain(t *testing.T, lines []string, from int, prev wire.Hash32, delta uint64) []string {
	t.Helper()
	for i := from; i < len(lines); i++ {
		var rec wire.AuditRecord
		if err := wire.Unmarshal([]byte(strings.TrimSuffix(lines[i], "\n")), &rec); err != nil {
			t.Fatal(err)
		}
		lines[i] = line(t, rec.Seq+delta, prev, rec.Time.Time(), rec.Event)
		prev = hashOf(lines[i])
	}
	return lines
}

// line is one record's line, with its newline.
func line(t *testing.T, seq uint64, prev wire.Hash32, at time.Time, ev wire.AuditEvent) string {
	t.Helper()
	b, err := wire.Marshal(wire.AuditRecord{Seq: seq, Time: wire.TimestampOf(at), Prev: prev, Event: ev})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func hashOf(l string) wire.Hash32 { return wire.Sha256([]byte(strings.TrimSuffix(l, "\n"))) }
