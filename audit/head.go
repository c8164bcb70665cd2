package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"boxmaker/wire"
)

// The head: the last record the writer committed, kept outside the log
// (brokerd keeps it in <home>/broker/audit-head), so that a log cut short,
// emptied, or rewritten from any point into a chain that verifies is still
// found at startup. A chain only shows what was changed inside it; the head
// shows what the chain must still reach.
//
// It is written after every commit's sync has returned, with one pwrite of a
// fixed-size record at offset 0 and no sync of its own, so the hot path pays
// a system call and not a second flush. After a crash the file holds the
// record of some earlier commit (or, at startup's durable write, the head as
// it was then): each was written only once the records it names were synced,
// so it can lag the log, never lead it. A record whose bytes a power cut
// mixed fails its check and counts as damaged.

// Head names the last record committed: Next is the seq the next record
// takes (0 while the log has none), Hash the last record's hash.
type Head struct {
	Next uint64
	Hash wire.Hash32
}

const (
	headPrefix = "audit-head v1 next="
	headHash   = " sha256="
	headCheck  = " check="
	// headSize is the length of every head file: the fields are fixed-width.
	headSize = len(headPrefix) + 20 + len(headHash) + 64 + len(headCheck) + 16 + 1
)

// appendHead encodes h: "audit-head v1 next=<20 digits> sha256=<hex>
// check=<16 hex>\n", the check being the start of the SHA-256 of what comes
// before it.
func appendHead(b []byte, h Head) []byte {
	start := len(b)
	b = append(b, headPrefix...)
	var digits [20]byte
	n := strconv.AppendUint(digits[:0], h.Next, 10)
	b = append(b, "00000000000000000000"[:20-len(n)]...)
	b = append(b, n...)
	b = append(b, headHash...)
	b = hex.AppendEncode(b, h.Hash[:])
	sum := sha256.Sum256(b[start:])
	b = append(b, headCheck...)
	b = hex.AppendEncode(b, sum[:8])
	return append(b, '\n')
}

// errHeadDamaged wraps every reason a head file is not a head.
var errHeadDamaged = errors.New("not a head")

// parseHead reads what appendHead wrote, and nothing else.
func parseHead(b []byte) (Head, error) {
	var h Head
	if len(b) != headSize {
		return h, fmt.Errorf("%w: %d bytes, not %d", errHeadDamaged, len(b), headSize)
	}
	i := len(headPrefix)
	j := i + 20
	k := j + len(headHash)
	next, err := strconv.ParseUint(string(b[i:j]), 10, 64)
	if err != nil || !bytes.HasPrefix(b, []byte(headPrefix)) || string(b[j:k]) != headHash {
		return h, fmt.Errorf("%w: not in the format brokerd writes", errHeadDamaged)
	}
	h.Next = next
	if _, err := hex.Decode(h.Hash[:], b[k:k+64]); err != nil {
		return h, fmt.Errorf("%w: not in the format brokerd writes", errHeadDamaged)
	}
	if want := appendHead(nil, h); !bytes.Equal(b, want) {
		return h, fmt.Errorf("%w: its check does not match its contents", errHeadDamaged)
	}
	return h, nil
}

// ReadHead reads the head file at path. An error matches fs.ErrNotExist if
// there is none; the text of any other says why it is not a head.
//
// It does not follow a symbolic link and reads only a regular file (issue
// 29, class 1): a link to an older head, or to a file another user can
// write, would vouch for a log it does not describe, a dangling one would
// read as no head, and a FIFO would stall the start. Such a name is an
// error that is neither fs.ErrNotExist nor damage: startup refuses it as
// unavailable.
func ReadHead(path string) (Head, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err == syscall.ELOOP {
		return Head{}, fmt.Errorf("%s is a symbolic link, not the file brokerd writes", path)
	}
	if err != nil {
		return Head{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return Head{}, err
	} else if !st.Mode().IsRegular() {
		return Head{}, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	// One byte more than a head, to tell a longer file from a head.
	b, err := io.ReadAll(io.LimitReader(f, int64(headSize)+1))
	if err != nil {
		return Head{}, err
	}
	return parseHead(b)
}

// createHead writes h to path durably, replacing any file there (a new file,
// synced, renamed over it, and the directory synced), and returns it open
// for the commits' writes. Startup does this once, off the hot path.
func createHead(path string, h Head) (*os.File, error) {
	if err := makeDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	tmp := path + ".new"
	// Made anew, never opened through what is at the name: a link planted
	// there would have the head written into (and its target truncated).
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, unavailable("removing "+tmp, err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, unavailable("creating "+tmp, err)
	}
	if _, err = f.Write(appendHead(nil, h)); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(osOpenFile, filepath.Dir(path))
	}
	if err != nil {
		_ = f.Close() // the write's error is the one to report
		return nil, unavailable("writing "+path, err)
	}
	return f, nil
}

// HeadError is Open's error when the log does not hold the record the head
// names, or the head is missing or damaged; Options.AcceptBreak records it
// and goes on.
type HeadError struct {
	Problem wire.HeadProblem
	// Head is what the head file said; nil if it is missing or damaged.
	Head *Head
	What string
}

func (e *HeadError) Error() string {
	see := "see docs/runbook.md#audit-head-mismatch"
	switch e.Problem {
	case wire.HeadMissing:
		see = "see docs/runbook.md#audit-head-missing"
	case wire.HeadDamaged:
		see = "see docs/runbook.md#audit-head-damaged"
	}
	return "audit: " + e.What + "\n" + see
}

func (e *HeadError) Unwrap() error { return ErrHeadMismatch }

// event is the AcceptedHead record that accepts e.
func (e *HeadError) event() wire.AcceptedHeadEvent {
	ev := wire.AcceptedHeadEvent{Problem: e.Problem}
	if e.Head != nil {
		seq, h := e.Head.Next-1, e.Head.Hash
		ev.HeadSeq, ev.HeadSha256 = &seq, &h
	}
	return ev
}

// readHeadFor reads the head startup compares the log with: nil and no
// error if there is no file. A damaged file is a *HeadError; a file that
// cannot be read at all is ErrUnavailable.
func readHeadFor(path string) (*Head, *HeadError, error) {
	if path == "" {
		return nil, nil, nil // the caller has none to compare
	}
	h, err := ReadHead(path)
	switch {
	case err == nil:
		return &h, nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case errors.Is(err, errHeadDamaged):
		return nil, &HeadError{Problem: wire.HeadDamaged,
			What: fmt.Sprintf("the head brokerd keeps outside the log, %s, is damaged: %v", path, err)}, nil
	}
	return nil, nil, unavailable("reading "+path, err)
}

// compareHead says how the verified log disagrees with head, if it does:
// the record with the head's seq must be part of the chain and hash to the
// head's hash. A log that goes on past it is a head that lagged: fine.
func compareHead(path string, head Head, rep ChainReport) *HeadError {
	if head.Next == 0 {
		return nil // the head was written before the first record
	}
	seq := head.Next - 1
	e := &HeadError{Problem: wire.HeadDiffers, Head: &head}
	switch w := rep.found(seq); {
	case w != nil && w.hash == head.Hash:
		return nil
	case w != nil:
		e.What = fmt.Sprintf("record %d (%s) hashes to %s, but the head in %s says %s", seq, w.loc, w.hash, path, head.Hash)
	case rep.Head == nil && rep.Failure == nil:
		e.Problem = wire.HeadBeyondLog
		e.What = fmt.Sprintf("the log has no records, but the head in %s names record %d (%s)", path, seq, head.Hash)
	case seq >= rep.NextSeq:
		e.Problem = wire.HeadBeyondLog
		e.What = fmt.Sprintf("the log ends before record %d, which the head in %s names (%s); its next seq is %d",
			seq, path, head.Hash, rep.NextSeq)
	default:
		e.What = fmt.Sprintf("the chain holds no record %d, which the head in %s names (%s)", seq, path, head.Hash)
	}
	return e
}

// missingHead is the HeadError for a log with records and no head file.
func missingHead(path string, rep ChainReport) *HeadError {
	return &HeadError{Problem: wire.HeadMissing,
		What: fmt.Sprintf("the log holds records (next seq %d), but the head brokerd keeps outside it, %s, is missing", rep.NextSeq, path)}
}
