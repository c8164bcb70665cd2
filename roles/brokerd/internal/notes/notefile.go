package notes

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"boxmaker/wire"
)

// maxNoteFile bounds what is read of one note file. The largest valid file
// is the text escaped at six bytes a byte (\u0000) plus the title and the
// label: far under 1 MiB. A larger file is damaged, never read whole.
const maxNoteFile = 1 << 20

// tmpPrefix starts the names of the files written before a rename. It
// starts with a dot, which no id has, so a left-over one is never a note.
const tmpPrefix = ".notes-tmp-"

// noteID returns the id a directory entry names, or "" when the name is not
// <valid-id>.json (such files are not notes and are ignored).
func noteID(name string) string {
	id, ok := strings.CutSuffix(name, ".json")
	if !ok || !wire.ValidID(id) {
		return ""
	}
	return id
}

// encodeNote is a note file's bytes: the note as wire writes it (compact,
// fields in declared order, no trailing newline). Text and title are JSON
// strings, so nothing in them can end the string or add a member: the label
// is always the one given.
func encodeNote(n Note) ([]byte, error) {
	if err := checkNote(n); err != nil {
		return nil, err
	}
	return wire.Marshal(n)
}

// decodeNote parses a note file strictly: wire's decoder refuses unknown
// members, duplicate names, case variants, invalid UTF-8, trailing data and
// anything not in the canonical form encodeNote writes; then the values are
// checked as Put checks them.
func decodeNote(b []byte) (Note, error) {
	var n Note
	if err := wire.Unmarshal(b, &n); err != nil {
		return Note{}, err
	}
	if err := checkNote(n); err != nil {
		return Note{}, err
	}
	return n, nil
}

// checkNote is every rule a stored note obeys, whether from Put or from disk.
func checkNote(n Note) error {
	switch {
	case !wire.ValidID(n.ID):
		return fmt.Errorf("%w: note id %q is not 1 to 64 characters of [a-z0-9-]", ErrInvalid, n.ID)
	case len(n.Title) > MaxTitleBytes:
		return fmt.Errorf("%w: title is %d bytes, more than %d", ErrTooLarge, len(n.Title), MaxTitleBytes)
	case len(n.Text) > MaxTextBytes:
		return fmt.Errorf("%w: text is %d bytes, more than %d", ErrTooLarge, len(n.Text), MaxTextBytes)
	case !utf8.ValidString(n.Title) || !utf8.ValidString(n.Text):
		return fmt.Errorf("%w: title and text must be valid UTF-8", ErrInvalid)
	}
	if err := checkLabel(n.Label); err != nil {
		return err
	}
	if p := n.Promoted; p != nil {
		if err := checkOwner(p.By); err != nil {
			return err
		}
		if _, err := p.At.MarshalText(); err != nil {
			return fmt.Errorf("%w: promotion time: %v", ErrInvalid, err)
		}
	}
	return nil
}

func checkLabel(l Label) error {
	if !l.Taint.Valid() {
		return fmt.Errorf("%w: label taint %v is not public, private or secret", ErrInvalid, l.Taint)
	}
	if l.Session.IsZero() {
		return fmt.Errorf("%w: label has no session", ErrInvalid)
	}
	if _, err := l.WrittenAt.MarshalText(); err != nil {
		return fmt.Errorf("%w: label time: %v", ErrInvalid, err)
	}
	return nil
}

// checkOwner accepts a user name of 1 to 64 printable bytes without spaces:
// what a promotion records must print on one line of bxctl's output.
func checkOwner(by string) error {
	if len(by) == 0 || len(by) > 64 {
		return fmt.Errorf("%w: promoter name must be 1 to 64 bytes", ErrInvalid)
	}
	for i := 0; i < len(by); i++ {
		if by[i] <= ' ' || by[i] >= 0x7f {
			return fmt.Errorf("%w: promoter name %q must be printable ASCII without spaces", ErrInvalid, by)
		}
	}
	return nil
}

// readNoteFile reads and decodes one note file. It never follows a symbolic
// link (a link could point at any file brokerd can read) and refuses a file
// that is not regular or is larger than any note can be. The id inside must
// be the file's own.
func readNoteFile(path, id string) (Note, error) {
	// Look before opening: opening a device or a FIFO can have effects.
	if fi, err := os.Lstat(path); err != nil {
		return Note{}, err
	} else if !fi.Mode().IsRegular() {
		return Note{}, fmt.Errorf("%w: not a regular file (%s)", errDamaged, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		// Replaced by a symbolic link since the look.
		return Note{}, fmt.Errorf("%w: a symbolic link", errDamaged)
	} else if err != nil {
		return Note{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Note{}, err
	}
	if !fi.Mode().IsRegular() {
		return Note{}, fmt.Errorf("%w: not a regular file", errDamaged)
	}
	if fi.Size() > maxNoteFile {
		return Note{}, fmt.Errorf("%w: larger than %d bytes", errDamaged, maxNoteFile)
	}
	// One read of the size fstat gave, and one more byte to see the file
	// did not grow since.
	b := make([]byte, 0, fi.Size()+1)
	b, err = readAllInto(b, io.LimitReader(f, maxNoteFile+1))
	if err != nil {
		return Note{}, err
	}
	if len(b) > maxNoteFile {
		return Note{}, fmt.Errorf("%w: larger than %d bytes", errDamaged, maxNoteFile)
	}
	n, err := decodeNote(b)
	if err != nil {
		return Note{}, fmt.Errorf("%w: %v", errDamaged, err)
	}
	if n.ID != id {
		return Note{}, fmt.Errorf("%w: the file holds note %q", errDamaged, n.ID)
	}
	return n, nil
}

// readIndexFile reads the index without following a link, without
// blocking, and only if it is a regular file (issue 29, class 1): a FIFO
// there must not stall brokerd's start, and an index is brokerd's own file,
// never one a link names. Any error means "rebuild": the notes are the
// truth.
func readIndexFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return readAllInto(make([]byte, 0, fi.Size()+1), f)
}

// readAllInto is io.ReadAll into b's spare capacity.
func readAllInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		} else if err != nil {
			return b, err
		}
	}
}

// errDamaged marks a file that exists but is not a valid note. It is wrapped
// by damagedError, which names the file and the runbook entry.
var errDamaged = errors.New("not a valid note file")

// writeDurably replaces path with b: a temporary file in the same directory,
// written and synced, renamed over path, then the directory synced, so that
// after a crash path holds either the old bytes or the new, never a part.
func writeDurably(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tmpPrefix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// removeDurably removes path and syncs its directory.
func removeDurably(path string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// newID is "n-" and 12 random hex digits: 48 bits, so a collision among
// 10,000 notes is about one in 5 million; Put still checks and draws again.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "n-" + hex.EncodeToString(b[:])
}
