package audit

import (
	"fmt"

	"boxmaker/wire"
)

// Location is a line of the log: a file name (no directory) and a 1-based
// line number.
type Location struct {
	File string
	Line uint64
}

func (l Location) String() string { return fmt.Sprintf("%s:%d", l.File, l.Line) }

// ChainFailure is the first line that broke the chain.
type ChainFailure struct {
	Location
	What string
	// LastGood is the hash of the last line that verified before the failure
	// (all zeros if none did): what an AcceptedBreak record must name.
	LastGood wire.Hash32
}

func (f ChainFailure) String() string { return f.Location.String() + ": " + f.What }

// ChainReport is what a ChainVerifier found.
type ChainReport struct {
	// Records counts the lines that verified (recovered torn lines, a torn
	// tail and lines inside a broken stretch are not records).
	Records uint64
	// Head is the hash of the last line that verified, or of the resume
	// point; nil if there is none.
	Head *wire.Hash32
	// NextSeq is the seq the next record must have.
	NextSeq uint64
	// Failure is the first failure not cleared by an accepted break.
	Failure *ChainFailure
	// Recoveries are torn lines, each followed by the Recovery record that
	// describes it.
	Recoveries []Location
	// AcceptedBreaks are the failures that an AcceptedBreak record accepted.
	AcceptedBreaks []Location
	// AcceptedHeads are AcceptedHead records: startups that went on with a
	// log that did not hold the head brokerd had kept outside it.
	AcceptedHeads []Location
	// Abandoned holds the seq of every Ask decision with no later Approval for
	// the same session and call.
	Abandoned []uint64
	// ClockWarnings are records whose time is before the previous record's.
	ClockWarnings []Location
	// TornTail is the last line of the last file if it has no newline.
	TornTail *Location

	// What startup needs to write after a torn tail or a failure; only this
	// package reads them.
	torn tornInfo
	brk  breakInfo
	slow uint64 // lines parseFast refused and wire.Unmarshal accepted: a parseFast bug
	// watched are the records with the seqs the verifier was asked to
	// watch, those the chain holds.
	watched []watched
}

type watched struct {
	seq  uint64
	loc  Location
	hash wire.Hash32
}

// found is the watched record with this seq; nil if the chain holds none.
func (r *ChainReport) found(seq uint64) *watched {
	for i := range r.watched {
		if r.watched[i].seq == seq {
			return &r.watched[i]
		}
	}
	return nil
}

// tornInfo describes the torn tail and where a Recovery record for it chains
// from.
type tornInfo struct {
	bytes uint64
	sha   wire.Hash32
	prev  wire.Hash32 // hash of the line before the torn one
	seq   uint64      // the seq the Recovery record takes
}

// breakInfo says how an AcceptedBreak for the failure must be written: prev
// is the hash of the last line, seq one more than the highest seq seen since
// the failure (ok is false if that would overflow).
type breakInfo struct {
	prev wire.Hash32
	seq  uint64
	ok   bool
}
