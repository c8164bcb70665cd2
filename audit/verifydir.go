package audit

import (
	"errors"
	"fmt"
	"path/filepath"

	"boxmaker/wire"
)

// VerifyDir verifies every log file in dir, oldest first, from the first
// record ever. An error means the files could not be read; what they hold is
// in the report.
func VerifyDir(dir string) (ChainReport, error) { return verifyDir(dir) }

// verifyDir is VerifyDir, watching for the records with the seqs in watch.
func verifyDir(dir string, watch ...uint64) (ChainReport, error) {
	names, err := logNames(dir)
	if err != nil {
		return ChainReport{}, fmt.Errorf("audit: %w", err)
	}
	v := NewChainVerifier()
	v.watchSeq(watch...)
	for _, name := range names {
		if err := feedFile(v, filepath.Join(dir, name)); err != nil {
			return ChainReport{}, err
		}
	}
	return v.Finish(), nil
}

// VerifyDirHead is VerifyDir, and also compares the log with the head file
// brokerd keeps (head.go), as brokerd's startup does, if there is one: a
// *HeadError says how they disagree. With no head file (or headFile "") it
// is VerifyDir.
func VerifyDirHead(dir, headFile string) (ChainReport, *HeadError, error) {
	rep, herr, _, err := verifyDirHeads(dir, headFile, nil)
	return rep, herr, err
}

// VerifyDirPosted is VerifyDirHead, and also holds the log to a head kept
// off the host (gatewayd posts the head to the owner, issue 14): the chain
// must hold a record with seq posted.Seq that hashes to posted.Hash. A
// *PostedHeadError says how it does not. The log is read once for both.
func VerifyDirPosted(dir, headFile string, posted wire.AuditHead) (ChainReport, *HeadError, *PostedHeadError, error) {
	return verifyDirHeads(dir, headFile, &posted)
}

func verifyDirHeads(dir, headFile string, posted *wire.AuditHead) (ChainReport, *HeadError, *PostedHeadError, error) {
	head, herr, err := readHeadFor(headFile)
	var watch []uint64
	if head != nil && head.Next > 0 {
		watch = append(watch, head.Next-1)
	}
	if posted != nil {
		watch = append(watch, posted.Seq)
	}
	rep, verr := verifyDir(dir, watch...)
	if err != nil || verr != nil {
		return rep, herr, nil, errors.Join(err, verr)
	}
	if head != nil {
		herr = compareHead(headFile, *head, rep)
	}
	var perr *PostedHeadError
	if posted != nil {
		perr = comparePosted(*posted, rep)
	}
	return rep, herr, perr, nil
}
