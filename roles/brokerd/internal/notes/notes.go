// Package notes is brokerd's note store and its search index (issue 17):
// one JSON file per note under <home>/memory/notes, each carrying the label
// brokerd computed when it was written, and an index under <home>/index that
// is rebuilt from the notes whenever it is missing, damaged or stale.
//
// The label is a field of the file beside the title and text, which are
// JSON strings: no text can end its string, add a member or repeat one (the
// decoder is strict), so no text can change the label. The index holds no
// label: every note returned is read from its own file.
package notes

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// Label is where a note came from, computed by brokerd from the writing
// session's state.
type Label struct {
	Taint     wire.DataClass `json:"taint"`
	Untrusted bool           `json:"untrusted"`
	Session   wire.SessionID `json:"session"`
	WrittenAt wire.Timestamp `json:"written_at"`
}

// Promotion records the owner vouching for a note (clears its untrusted mark).
type Promotion struct {
	By string         `json:"by"` // the owner's user name
	At wire.Timestamp `json:"at"`
}

// Note is one stored note.
type Note struct {
	ID       string     `json:"id"` // [a-z0-9-], 1..64 (wire.ValidID)
	Title    string     `json:"title"`
	Text     string     `json:"text"`
	Label    Label      `json:"label"`
	Promoted *Promotion `json:"promoted"`
}

// Untrusted reports whether the note still carries an untrusted mark:
// Label.Untrusted and not promoted.
func (n Note) Untrusted() bool { return n.Label.Untrusted && n.Promoted == nil }

// The limits Put enforces, in bytes.
const (
	MaxTitleBytes = 200
	MaxTextBytes  = 16 << 10
)

var (
	// ErrNoNote: no note has that id.
	ErrNoNote = errors.New("notes: no such note")
	// ErrTooLarge: a title or text over MaxTitleBytes or MaxTextBytes.
	ErrTooLarge = errors.New("notes: too large")
	// ErrInvalid: an argument the store refuses (an id not of [a-z0-9-],
	// invalid UTF-8, an incomplete label, a query without a word).
	ErrInvalid = errors.New("notes: invalid")
	// ErrDamaged: the note's file exists but is not a valid note; the
	// error names the file.
	ErrDamaged = errDamaged
	// ErrNotReplaced: Put refused to replace a note it could not read
	// (damaged or unreadable): the replacement would erase what a repair
	// needs, and whatever label the old note had. Also ErrDamaged or the
	// read's own error.
	ErrNotReplaced = errors.New("notes: not replaced")
	// ErrProtected: an untrusted writer's Put of a note that is trusted or
	// promoted.
	ErrProtected = errors.New("notes: an untrusted session cannot replace a trusted note")
	// ErrFull: a new note's Put when the store holds MaxNotes.
	ErrFull = errors.New("notes: the store is full")
)

// MaxNotes bounds the note store, damaged files counted: each Put rewrites
// the index, and the notes share a disk with the audit log, which must
// never fill up because a model wrote notes in a loop.
const MaxNotes = 50_000

// indexName is the index file's name in the index directory.
const indexName = "notes.idx"

// Store is the notes directory and its index. It is safe for concurrent
// use: one mutex orders every operation, the writes included, so the index
// on disk always follows the notes in the order they were written.
type Store struct {
	mu       sync.Mutex
	notesDir string
	indexDir string
	x        *index
	dirty    bool // x differs from the index file (a damaged or vanished note found on reading)
	maxNotes int  // MaxNotes; a test lowers it
}

// Open uses notesDir (<home>/memory/notes) and indexDir (<home>/index),
// creating each 0700 if missing. It loads the index and rebuilds it from
// the notes when it is missing, damaged, of another version, or does not
// match the note files on disk (their ids, sizes and modification times);
// rebuilt reports whether that happened.
func Open(notesDir, indexDir string) (s *Store, rebuilt bool, err error) {
	for _, d := range []string{notesDir, indexDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, false, fmt.Errorf("notes: %w", err)
		}
		removeTemps(d)
	}
	s = &Store{notesDir: notesDir, indexDir: indexDir, maxNotes: MaxNotes}
	files, err := s.scan()
	if err != nil {
		return nil, false, err
	}
	if b, err := readIndexFile(s.indexPath()); err == nil {
		if x, err := parseIndex(b); err == nil && x.matches(files) {
			s.x = x
			return s, false, nil
		}
	}
	// Missing, unreadable, damaged or stale: the notes are the truth.
	if err := s.rebuildFrom(files); err != nil {
		return nil, true, err
	}
	return s, true, nil
}

// removeTemps removes what an interrupted writeDurably left. Such names
// start with a dot, so they were never notes or the index.
func removeTemps(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func (s *Store) indexPath() string         { return filepath.Join(s.indexDir, indexName) }
func (s *Store) notePath(id string) string { return filepath.Join(s.notesDir, id+".json") }

// scan lists the note files: every entry named <valid-id>.json, with its
// size and modification time (of the entry itself: a symbolic link is
// never followed, and is reported as damaged when read).
func (s *Store) scan() (map[string]stamp, error) {
	ents, err := os.ReadDir(s.notesDir)
	if err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	files := make(map[string]stamp, len(ents))
	for _, e := range ents {
		id := noteID(e.Name())
		if id == "" {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("notes: %w", err)
		}
		files[id] = stamp{fi.Size(), fi.ModTime().UnixNano()}
	}
	return files, nil
}

// rebuildFrom reads every note file once and writes a new index. A damaged
// file is recorded (Damaged), not indexed.
func (s *Store) rebuildFrom(files map[string]stamp) error {
	x := newIndex()
	ids := make([]string, 0, len(files))
	for id := range files {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		n, err := readNoteFile(s.notePath(id), id)
		switch {
		case err == nil:
			x.add(id, files[id], n.Label.WrittenAt, n.Title, n.Text)
		case errors.Is(err, errDamaged):
			x.damaged[id] = files[id]
		case errors.Is(err, os.ErrNotExist):
			// Removed since the scan: not a note any more.
		default:
			return fmt.Errorf("notes: reading %s: %w", s.notePath(id), err)
		}
	}
	s.x, s.dirty = x, false
	return s.writeIndex()
}

// Rebuild reads every note file and writes the index anew.
func (s *Store) Rebuild() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	files, err := s.scan()
	if err != nil {
		return err
	}
	return s.rebuildFrom(files)
}

func (s *Store) writeIndex() error {
	if err := writeDurably(s.indexPath(), encodeIndex(s.x)); err != nil {
		return fmt.Errorf("notes: writing the index: %w", err)
	}
	s.dirty = false
	return nil
}

// flush writes the index if reading found a note damaged or gone.
func (s *Store) flush(err error) error {
	if s.dirty {
		return errors.Join(err, s.writeIndex())
	}
	return err
}

// known reports whether id names a note file the store knows of, valid or
// damaged.
func (s *Store) known(id string) bool {
	_, ok := s.x.byID[id]
	_, bad := s.x.damaged[id]
	return ok || bad
}

// Get reads note id from its file. A damaged file is an error naming it
// (errors.Is ErrDamaged), never a note.
func (s *Store) Get(id string) (Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !wire.ValidID(id) {
		return Note{}, fmt.Errorf("%w: note id %q is not 1 to 64 characters of [a-z0-9-]", ErrInvalid, id)
	}
	if !s.known(id) {
		return Note{}, fmt.Errorf("%w: %q", ErrNoNote, id)
	}
	n, err := s.read(id)
	return n, s.flush(err)
}

// read reads a note the store knows of. A file found damaged moves from the
// index to the damaged list; one found gone leaves the index.
func (s *Store) read(id string) (Note, error) {
	path := s.notePath(id)
	n, err := readNoteFile(path, id)
	switch {
	case err == nil:
		if _, bad := s.x.damaged[id]; bad {
			// Listed as damaged, valid now (restored by hand): index it
			// again, so that every valid note the store returns is indexed.
			fi, err := os.Lstat(path)
			if err != nil {
				return Note{}, fmt.Errorf("notes: %w", err)
			}
			s.x.add(id, stamp{fi.Size(), fi.ModTime().UnixNano()}, n.Label.WrittenAt, n.Title, n.Text)
			s.dirty = true
		}
		return n, nil
	case errors.Is(err, os.ErrNotExist):
		s.x.remove(id)
		delete(s.x.damaged, id)
		s.dirty = true
		return Note{}, fmt.Errorf("%w: %q (its file is gone)", ErrNoNote, id)
	case errors.Is(err, errDamaged):
		if fi, serr := os.Lstat(path); serr == nil {
			s.x.remove(id)
			s.x.damaged[id] = stamp{fi.Size(), fi.ModTime().UnixNano()}
			s.dirty = true
		}
		return Note{}, damagedError(path, err)
	default:
		return Note{}, fmt.Errorf("notes: reading %s: %w", path, err)
	}
}

func damagedError(path string, err error) error {
	if !errors.Is(err, errDamaged) {
		err = fmt.Errorf("%w: %v", errDamaged, err)
	}
	return fmt.Errorf("notes: %s: %w; %s", path, err, runbook.See("note-damaged"))
}

// Search returns up to limit notes holding every token of query in the
// title or text, best first (see index.search for the order). A query
// without a token, or a limit under 1, is ErrInvalid.
func (s *Store) Search(query string, limit int) ([]Note, error) {
	toks := queryTokens(query)
	if len(toks) == 0 {
		return nil, fmt.Errorf("%w: the query has no word (letters or digits)", ErrInvalid)
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d", ErrInvalid, limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readAll(s.x.search(toks), limit)
}

// readAll reads the hits' notes in order until it has limit of them,
// passing over damaged or vanished files (now listed by Damaged).
func (s *Store) readAll(hits []hit, limit int) ([]Note, error) {
	out := make([]Note, 0, min(limit, len(hits)))
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		n, err := s.read(h.d.id)
		if errors.Is(err, errDamaged) || errors.Is(err, ErrNoNote) {
			continue
		} else if err != nil {
			return nil, s.flush(err)
		}
		out = append(out, n)
	}
	return out, s.flush(nil)
}

// List returns every valid note, newest first.
func (s *Store) List() ([]Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hits := make([]hit, 0, len(s.x.byID))
	for _, d := range s.x.docs {
		if d != nil {
			hits = append(hits, hit{d: d})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return newestFirst(a.d, b.d) })
	return s.readAll(hits, len(hits))
}

// ErrChanged: PromoteSeen's note is no longer the version the owner saw.
var ErrChanged = errors.New("notes: the note was written again since it was shown")

// versioned is what a note's Version covers: everything the owner reads
// when vouching for it, and nothing of the promotion itself.
type versioned struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
	Label Label  `json:"label"`
}

// Version is the SHA-256 of the note's id, title, text and label (wire's
// canonical JSON): what `bxctl notes show` prints and `bxctl notes promote`
// must name, so that the owner vouches for exactly the text they read.
func (n Note) Version() wire.Hash32 {
	b, err := wire.Marshal(versioned{n.ID, n.Title, n.Text, n.Label})
	if err != nil {
		// Only a note the store refused to write could fail to encode;
		// its version matches nothing.
		return wire.Hash32{}
	}
	return sha256.Sum256(b)
}

// PromoteSeen is Promote of the version seen only: if note id was written
// again since (its Version differs), nothing changes and the error is
// ErrChanged. The check and the change are one step under the store's
// lock, so no remember can slip between them.
func (s *Store) PromoteSeen(id string, seen wire.Hash32, by string, at wire.Timestamp) (Note, error) {
	return s.promote(id, &seen, by, at)
}

// Promote records the owner vouching for note id, which clears its
// untrusted mark; the label itself is kept as written.
func (s *Store) Promote(id, by string, at wire.Timestamp) (Note, error) {
	return s.promote(id, nil, by, at)
}

func (s *Store) promote(id string, seen *wire.Hash32, by string, at wire.Timestamp) (Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !wire.ValidID(id) {
		return Note{}, fmt.Errorf("%w: note id %q is not 1 to 64 characters of [a-z0-9-]", ErrInvalid, id)
	}
	if err := checkOwner(by); err != nil {
		return Note{}, err
	}
	if !s.known(id) {
		return Note{}, fmt.Errorf("%w: %q", ErrNoNote, id)
	}
	n, err := s.read(id)
	if err != nil {
		return Note{}, s.flush(err)
	}
	if seen != nil && n.Version() != *seen {
		return Note{}, fmt.Errorf("%w: %q", ErrChanged, id)
	}
	n.Promoted = &Promotion{By: by, At: at}
	b, err := encodeNote(n)
	if err != nil {
		return Note{}, err
	}
	st, err := s.write(id, b)
	if err != nil {
		return Note{}, err
	}
	s.x.docs[s.x.byID[id]].st = st
	return n, s.writeIndex()
}

// Delete removes note id, valid or damaged (ErrNoNote when absent).
func (s *Store) Delete(id string) error { return s.DeleteRecorded(id, nil) }

// DeleteRecorded is Delete that first calls record (the audit append),
// under the store's lock once the note is known to be there: the check,
// the record and the removal are one step, so no write lands between them
// and a record is never written for a note that was not there. A record
// that fails deletes nothing and is returned as it is. Only the name is
// removed: a link at it is removed, never what it points to.
func (s *Store) DeleteRecorded(id string, record func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !wire.ValidID(id) {
		return fmt.Errorf("%w: note id %q is not 1 to 64 characters of [a-z0-9-]", ErrInvalid, id)
	}
	if !s.known(id) {
		return fmt.Errorf("%w: %q", ErrNoNote, id)
	}
	if _, err := os.Lstat(s.notePath(id)); errors.Is(err, os.ErrNotExist) {
		// Known to the index, but its file is gone: nothing to record.
		s.x.remove(id)
		delete(s.x.damaged, id)
		s.dirty = true
		return s.flush(fmt.Errorf("%w: %q (its file is gone)", ErrNoNote, id))
	} else if err != nil {
		// Not known to be there, and not removable either: no record of
		// a delete that would not happen.
		return fmt.Errorf("notes: %w", err)
	}
	if record != nil {
		if err := record(); err != nil {
			return err
		}
	}
	err := removeDurably(s.notePath(id))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("notes: %w", err)
	}
	s.x.remove(id)
	delete(s.x.damaged, id)
	return s.writeIndex()
}

// Len is the number of valid notes.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.x.byID)
}

// Damaged lists the paths of the note files found damaged (by the last
// rebuild, or on reading since), sorted. They are never indexed or returned.
func (s *Store) Damaged() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.x.damaged))
	for id := range s.x.damaged {
		out = append(out, s.notePath(id))
	}
	sort.Strings(out)
	return out
}
