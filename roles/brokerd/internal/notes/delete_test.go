package notes

import (
	"errors"
	"os"
	"testing"

	"boxmaker/wire"
)

// TestDeleteRecorded: the owner's delete is one step under the store's
// lock (issue 29, class 1). For every shape the old note can have, the
// record is written only when the note is there, a failed record deletes
// nothing, and a recorded delete removes the name (never a link's target).
func TestDeleteRecorded(t *testing.T) {
	refused := errors.New("the audit log cannot be written")
	for _, c := range oldNotes {
		for _, fail := range []bool{false, true} {
			name := c.name + map[bool]string{false: "/recorded", true: "/record fails"}[fail]
			t.Run(name, func(t *testing.T) {
				s, _, _ := open(t)
				n, err := s.Put("", "old", "the owner's words", label(t, wire.Private, c.name != "trusted", "s", 1))
				if err != nil {
					t.Fatal(err)
				}
				path := s.notePath(n.ID)
				if c.make != nil {
					c.make(t, s, n.ID, path)
				}
				var target string
				if l, err := os.Readlink(path); err == nil {
					target = l
				}
				before := snapshot(path)
				records := 0
				err = s.DeleteRecorded(n.ID, func() error {
					records++
					if fail {
						return refused
					}
					return nil
				})
				switch {
				case c.name == "gone":
					if !errors.Is(err, ErrNoNote) || records != 0 {
						t.Fatalf("deleting a note whose file is gone: %v, %d records; want ErrNoNote and none", err, records)
					}
					return
				case records != 1:
					t.Fatalf("%d records, want 1", records)
				case fail:
					if err != refused {
						t.Fatalf("DeleteRecorded: %v, want the record's error", err)
					}
					if after := snapshot(path); string(after) != string(before) {
						t.Fatalf("a failed record deleted: %q, was %q", after, before)
					}
					return
				case err != nil:
					t.Fatalf("DeleteRecorded: %v", err)
				}
				if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the note's name is still there: %v", err)
				}
				if target != "" {
					if _, err := os.Stat(target); err != nil {
						t.Fatalf("the link's target was removed: %v", err)
					}
				}
				if len(s.Damaged()) != 0 || s.Len() != 0 && c.name != "another note's" {
					t.Fatalf("after the delete: %d notes, damaged %v", s.Len(), s.Damaged())
				}
			})
		}
	}
}
