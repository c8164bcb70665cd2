package notes

import (
	"errors"
	"fmt"
	"os"

	"boxmaker/wire"
)

// Put writes a new note (id "") or replaces note id (ErrNoNote if it does
// not exist). A replacement takes the new label and drops any promotion:
// the text is the new writer's, wholly. It returns the stored note.
//
// Its guards are decided under the store's lock, in the same step as the
// write (issue 29, class 1), so no promotion, Put or Delete lands between
// them: a new note is ErrFull when the store holds MaxNotes; a replacement
// reads the old note first and is refused if it cannot (ErrNotReplaced,
// whatever the writer: only the owner deletes a damaged note), or if the
// writer is untrusted (l.Untrusted) and the old note is trusted or
// promoted (ErrProtected): a page the model read must not erase what the
// owner relies on.
func (s *Store) Put(id, title, text string, l Label) (Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != "" && !wire.ValidID(id) {
		return Note{}, fmt.Errorf("%w: note id %q is not 1 to 64 characters of [a-z0-9-]", ErrInvalid, id)
	}
	n := Note{ID: id, Title: title, Text: text, Label: l}
	if id == "" {
		for n.ID = newID(); s.known(n.ID) || exists(s.notePath(n.ID)); n.ID = newID() {
		}
	}
	b, err := encodeNote(n)
	if err != nil {
		return Note{}, err
	}
	if err := s.mayPut(id, l); err != nil {
		return Note{}, err
	}
	st, err := s.write(n.ID, b)
	if err != nil {
		return Note{}, err
	}
	s.x.add(n.ID, st, l.WrittenAt, title, text)
	return n, s.writeIndex()
}

// mayPut is Put's guard, called with the lock held.
func (s *Store) mayPut(id string, l Label) error {
	if id == "" {
		if len(s.x.byID)+len(s.x.damaged) >= s.maxNotes {
			return fmt.Errorf("%w: there are %d notes, the most brokerd keeps", ErrFull, s.maxNotes)
		}
		return nil
	}
	if !s.known(id) {
		return fmt.Errorf("%w: %q", ErrNoNote, id)
	}
	old, err := s.read(id)
	if errors.Is(err, ErrNoNote) {
		return s.flush(err)
	}
	if err != nil {
		return s.flush(fmt.Errorf("%w: note %s cannot be read: %w", ErrNotReplaced, id, err))
	}
	if l.Untrusted && !old.Untrusted() {
		return fmt.Errorf("%w: %q", ErrProtected, id)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// write stores a note file durably and returns its new stamp.
func (s *Store) write(id string, b []byte) (stamp, error) {
	path := s.notePath(id)
	if err := writeDurably(path, b); err != nil {
		return stamp{}, fmt.Errorf("notes: writing %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return stamp{}, fmt.Errorf("notes: %w", err)
	}
	return stamp{fi.Size(), fi.ModTime().UnixNano()}, nil
}
