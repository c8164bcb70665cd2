package audit

import (
	"testing"

	"boxmaker/wire"
)

// forge writes chains by hand, including broken ones, with the writer's own
// line encoder.
type forge struct {
	t    testing.TB
	seq  uint64
	prev wire.Hash32
	ts   wire.Timestamp
}

func newForge(t testing.TB) *forge { return &forge{t: t, ts: wire.TimestampOf(day0)} }

// next is the next line of an intact chain.
func (f *forge) next(ev wire.AuditEvent) []byte {
	return f.at(f.seq, f.prev, ev)
}

// at writes a line with the given seq and prev; the forge continues from it.
func (f *forge) at(seq uint64, prev wire.Hash32, ev wire.AuditEvent) []byte {
	f.t.Helper()
	evb, err := wire.Marshal(ev)
	if err != nil {
		f.t.Fatal(err)
	}
	f.ts++
	b, err := appendLine(nil, seq, f.ts, prev, evb)
	if err != nil {
		f.t.Fatal(err)
	}
	f.seq, f.prev = seq+1, wire.Sha256(b)
	return b
}

// after makes the forge continue from line b as if it verified.
func (f *forge) after(seq uint64, b []byte) {
	f.seq, f.prev = seq+1, wire.Sha256(b)
}

// fline is a line to feed: its bytes, its file, and whether it has a newline.
type fline struct {
	file    string
	b       []byte
	newline bool
}

// feed runs a fresh verifier over lines, in order.
func feed(v *ChainVerifier, lines []fline) ChainReport {
	file := ""
	for i, l := range lines {
		if l.file != file || i == 0 {
			v.File(l.file)
			file = l.file
		}
		last := i == len(lines)-1 || lines[i+1].file != l.file
		v.Line(l.b, last, l.newline)
	}
	return v.Finish()
}

// inFile makes complete lines of one file.
func inFile(file string, lines ...[]byte) []fline {
	out := make([]fline, len(lines))
	for i, b := range lines {
		out[i] = fline{file, b, true}
	}
	return out
}

const f1, f2 = "2026-09-17.jsonl", "2026-09-18.jsonl"

var someEvent = wire.RecoveryEvent{TornBytes: 1}
