package audit

import (
	"errors"
	"fmt"
	"path/filepath"
)

// VerifyDir verifies every log file in dir, oldest first, from the first
// record ever. An error means the files could not be read; what they hold is
// in the report.
func VerifyDir(dir string) (ChainReport, error) { return verifyDir(dir, nil) }

// verifyDir is VerifyDir, watching for the record with seq *watch if watch
// is not nil.
func verifyDir(dir string, watch *uint64) (ChainReport, error) {
	names, err := logNames(dir)
	if err != nil {
		return ChainReport{}, fmt.Errorf("audit: %w", err)
	}
	v := NewChainVerifier()
	if watch != nil {
		v.watchSeq(*watch)
	}
	for _, name := range names {
		if err := feedFile(v, filepath.Join(dir, name)); err != nil {
			return ChainReport{}, err
		}
	}
	return v.Finish(), nil
}

// VerifyDirHead is VerifyDir, and also compares the log with the head file
// brokerd keeps (head.go), as brokerd's startup does, if there is one: a
// *HeadError says how they disagree. With no head file it is VerifyDir.
func VerifyDirHead(dir, headFile string) (ChainReport, *HeadError, error) {
	head, herr, err := readHeadFor(headFile)
	if err != nil || head == nil {
		rep, verr := VerifyDir(dir)
		return rep, herr, errors.Join(err, verr)
	}
	var watch *uint64
	if head.Next > 0 {
		seq := head.Next - 1
		watch = &seq
	}
	rep, err := verifyDir(dir, watch)
	if err != nil {
		return rep, nil, err
	}
	return rep, compareHead(headFile, *head, rep), nil
}
