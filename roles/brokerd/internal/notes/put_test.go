package notes

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"boxmaker/wire"
)

// Issue 29, class 1: Put decides its guards under the store's lock, with
// the write. oldNote makes note id in one of the shapes a replacement can
// meet; it returns the store, the note's id and its path.
var oldNotes = []struct {
	name string
	make func(t *testing.T, s *Store, id, path string)
	// want is Put's error for a trusted and for an untrusted writer.
	trusted, untrusted error
}{
	{"untrusted", func(*testing.T, *Store, string, string) {}, nil, nil},
	{"trusted", nil, nil, ErrProtected},
	{"promoted", func(t *testing.T, s *Store, id, _ string) {
		if _, err := s.Promote(id, "owner", 5); err != nil {
			t.Fatal(err)
		}
	}, nil, ErrProtected},
	{"not JSON", func(t *testing.T, _ *Store, _, path string) { write(t, path, "\x00") }, ErrNotReplaced, ErrNotReplaced},
	{"another note's", func(t *testing.T, s *Store, _, path string) {
		other, err := s.Put("", "other", "other", label(t, wire.Private, true, "s", 1))
		if err != nil {
			t.Fatal(err)
		}
		write(t, path, string(read(t, s.notePath(other.ID))))
	}, ErrNotReplaced, ErrNotReplaced},
	{"a link", func(t *testing.T, _ *Store, _, path string) {
		target := filepath.Join(t.TempDir(), "n.json")
		write(t, target, string(read(t, path)))
		rm(t, path)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}, ErrNotReplaced, ErrNotReplaced},
	{"a fifo", func(t *testing.T, _ *Store, _, path string) {
		rm(t, path)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}, ErrNotReplaced, ErrNotReplaced},
	{"gone", func(t *testing.T, _ *Store, _, path string) { rm(t, path) }, ErrNoNote, ErrNoNote},
}

func TestPutGuard(t *testing.T) {
	for _, c := range oldNotes {
		for _, untrusted := range []bool{false, true} {
			name := c.name + map[bool]string{false: "/trusted writer", true: "/untrusted writer"}[untrusted]
			t.Run(name, func(t *testing.T) {
				s, _, _ := open(t)
				// The old note is untrusted unless the row says trusted.
				n, err := s.Put("", "old", "the owner's words", label(t, wire.Private, c.name != "trusted", "s", 1))
				if err != nil {
					t.Fatal(err)
				}
				path := s.notePath(n.ID)
				if c.make != nil {
					c.make(t, s, n.ID, path)
				}
				before := snapshot(path)
				want := map[bool]error{false: c.trusted, true: c.untrusted}[untrusted]
				_, err = s.Put(n.ID, "new", "a page's words", label(t, wire.Public, untrusted, "w", 2))
				if want == nil {
					if err != nil {
						t.Fatalf("Put: %v, want it written", err)
					}
					return
				}
				if !errors.Is(err, want) {
					t.Fatalf("Put: %v, want %v", err, want)
				}
				if after := snapshot(path); !bytes.Equal(before, after) {
					t.Fatalf("a refused Put changed the file: %q, was %q", after, before)
				}
			})
		}
	}
}

// snapshot is what is at path: a link's target, a file's bytes, or its absence.
func snapshot(path string) []byte {
	if target, err := os.Readlink(path); err == nil {
		return []byte("link " + target)
	}
	if fi, err := os.Lstat(path); err != nil {
		return []byte("absent")
	} else if !fi.Mode().IsRegular() {
		return []byte("mode " + fi.Mode().String())
	}
	b, _ := os.ReadFile(path)
	return b
}

// TestPutPromoteRace: an owner's promotion and an untrusted Put of the
// same note, at once, many times. Either the Put came first (and the
// promotion, of the version the owner saw, is refused) or the promotion
// came first and the Put is refused: the promotion is never erased.
func TestPutPromoteRace(t *testing.T) {
	s, _, _ := open(t)
	web := label(t, wire.Private, true, "web", 1)
	for round := range 300 {
		n, err := s.Put("", "old", "the owner's words", web)
		if err != nil {
			t.Fatal(err)
		}
		seen := n.Version()
		var putErr, promoteErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, putErr = s.Put(n.ID, "new", "a page's words", web) }()
		go func() { defer wg.Done(); _, promoteErr = s.PromoteSeen(n.ID, seen, "owner", 2) }()
		wg.Wait()
		got, err := s.Get(n.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case putErr == nil && errors.Is(promoteErr, ErrChanged) && got.Promoted == nil && got.Text == "a page's words":
		case errors.Is(putErr, ErrProtected) && promoteErr == nil && got.Promoted != nil && got.Text == "the owner's words":
		default:
			t.Fatalf("round %d: put %v, promote %v, note %q promoted %v", round, putErr, promoteErr, got.Text, got.Promoted != nil)
		}
	}
}

// TestPutCapRace: many new notes at once one below the cap; exactly one is
// written. A damaged file counts towards the cap: it still takes disk.
func TestPutCapRace(t *testing.T) {
	s, _, _ := open(t)
	s.maxNotes = 6
	l := label(t, wire.Private, true, "web", 1)
	for range 4 {
		if _, err := s.Put("", "t", "x", l); err != nil {
			t.Fatal(err)
		}
	}
	bad, err := s.Put("", "t", "x", l)
	if err != nil {
		t.Fatal(err)
	}
	write(t, s.notePath(bad.ID), "damaged")
	if _, err := s.Get(bad.ID); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Get of the damaged note: %v", err)
	}
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() { defer wg.Done(); _, err := s.Put("", "t", "x", l); errs <- err }()
	}
	wg.Wait()
	close(errs)
	written := 0
	for err := range errs {
		switch {
		case err == nil:
			written++
		case !errors.Is(err, ErrFull):
			t.Fatalf("Put: %v", err)
		}
	}
	if written != 1 || s.Len() != 5 || len(s.Damaged()) != 1 {
		t.Fatalf("%d written, %d notes and %d damaged; want 1, 5 and 1", written, s.Len(), len(s.Damaged()))
	}
}

// TestGuardMatchesOracle: random Puts, promotions, deletions and damage
// over a few ids, by trusted and untrusted writers; after each, whether
// the store wrote or refused matches a naive model of the rule.
func TestGuardMatchesOracle(t *testing.T) {
	type model struct{ untrusted, damaged bool }
	s, _, _ := open(t)
	s.maxNotes = 4
	rng := rand.New(rand.NewPCG(29, 1))
	notes := map[string]*model{}
	var ids []string
	for step := range 3000 {
		untrusted := rng.IntN(2) == 0
		l := label(t, wire.Private, untrusted, "s", uint64(step))
		var id string
		if len(ids) > 0 {
			id = ids[rng.IntN(len(ids))]
		}
		switch op := rng.IntN(10); {
		case op < 3 || id == "": // a new note
			n, err := s.Put("", "t", "x", l)
			if full := len(notes) >= 4; full != errors.Is(err, ErrFull) || (!full && err != nil) {
				t.Fatalf("step %d: new note with %d notes: %v", step, len(notes), err)
			}
			if err == nil {
				notes[n.ID] = &model{untrusted: untrusted}
				ids = append(ids, n.ID)
			}
		case op < 7: // a replacement
			m := notes[id]
			var want error
			switch {
			case m == nil:
				want = ErrNoNote
			case m.damaged:
				want = ErrNotReplaced
			case untrusted && !m.untrusted:
				want = ErrProtected
			}
			_, err := s.Put(id, "t", "y", l)
			if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
				t.Fatalf("step %d: replace of %+v by untrusted=%v: %v, want %v", step, m, untrusted, err, want)
			}
			if err == nil {
				m.untrusted = untrusted
			}
		case op < 8: // the owner promotes
			_, err := s.Promote(id, "owner", 1)
			if m := notes[id]; m != nil && !m.damaged {
				if err != nil {
					t.Fatalf("step %d: promote: %v", step, err)
				}
				m.untrusted = false
			}
		case op < 9: // damage
			if m := notes[id]; m != nil {
				write(t, s.notePath(id), "damaged")
				m.damaged = true
			}
		default: // the owner deletes
			err := s.Delete(id)
			if (notes[id] == nil) != errors.Is(err, ErrNoNote) {
				t.Fatalf("step %d: delete: %v", step, err)
			}
			delete(notes, id)
		}
	}
}
