package audit

import (
	"fmt"
	"os"
	"path/filepath"
)

// check is startup's verification. It verifies the newest non-empty file,
// resumed from the last lines before it, without reading the older files.
// Only a clean answer from that is used: otherwise, or when full is asked
// for (AcceptBreak must find the same first failure `bxctl audit verify`
// reports), the whole log is verified, so startup and bxctl agree on every
// failure and every accepted break. It also makes the newest file the one
// the writer appends to.
func (w *Writer) check(full bool, watch *uint64) (ChainReport, bool, error) {
	names, err := logNames(w.dir)
	if err != nil {
		return ChainReport{}, false, fmt.Errorf("audit: %w", err)
	}
	w.name = ""
	if len(names) > 0 {
		w.name = names[len(names)-1]
	}
	if !full {
		rep, ok, err := w.quickCheck(names, watch)
		// The record the head names is older than the lines the quick
		// check read: only the whole log can say whether it is there.
		older := watch != nil && rep.found(*watch) == nil && *watch < rep.NextSeq
		if err != nil || ok && rep.Failure == nil && !older {
			return rep, false, err
		}
	}
	var seqs []uint64
	if watch != nil {
		seqs = append(seqs, *watch)
	}
	rep, err := verifyDir(w.dir, seqs...)
	return rep, true, err
}

// quickCheck verifies the newest non-empty file. It trusts the seq and prev
// of the first of the last two lines before that file that parses, as the
// point to resume from: two, because the newest file may open with the
// Recovery record for the torn last line of the file before. ok is false if
// there is no such line.
func (w *Writer) quickCheck(names []string, watch *uint64) (rep ChainReport, ok bool, err error) {
	latest := -1
	for i := len(names) - 1; i >= 0 && latest < 0; i-- {
		st, err := os.Stat(filepath.Join(w.dir, names[i]))
		if err != nil {
			return rep, false, fmt.Errorf("audit: %w", err)
		}
		if st.Size() > 0 {
			latest = i
		}
	}
	if latest < 0 {
		return NewChainVerifier().Finish(), true, nil // nothing to watch for, either
	}
	tail, err := lastLines(w.dir, names[:latest], 2)
	if err != nil {
		return rep, false, err
	}
	v := resumeFrom(tail, watch)
	if v == nil {
		return rep, false, nil
	}
	if err := feedFile(v, filepath.Join(w.dir, names[latest])); err != nil {
		return rep, false, err
	}
	return v.Finish(), true, nil
}

// resumeFrom makes a verifier that has seen the lines of tail, trusting the
// first that parses; nil if none does. With no lines, the log starts afresh.
func resumeFrom(tail []tailLine, watch *uint64) *ChainVerifier {
	if len(tail) == 0 {
		v := NewChainVerifier()
		if watch != nil {
			v.watchSeq(*watch)
		}
		return v
	}
	for i, l := range tail {
		var r lineRec
		var d parser
		if ok, _, _ := parseLine(&d, l.b, &r); !ok {
			continue
		}
		v := ResumeChainVerifier(r.seq, r.prevHash)
		if watch != nil {
			v.watchSeq(*watch)
		}
		// Locations in these files are counted from the first line fed, not
		// from the top of the file; they matter only in a report that is
		// not clean, which check throws away.
		file := ""
		for _, l := range tail[i:] {
			if l.file != file {
				v.File(l.file)
				file = l.file
			}
			v.Line(l.b, l.last, l.newline)
		}
		return v
	}
	return nil
}
