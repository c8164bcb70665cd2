package notes

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"boxmaker/wire"
)

// TestDamagedNote: a note file that does not decode is reported (Damaged,
// and Get's error names it), is never returned by Search or List, and stays
// reported across reopening; deleting it or replacing it clears it.
func TestDamagedNote(t *testing.T) {
	damages := []struct {
		name   string
		damage func(t *testing.T, path string, n Note)
	}{
		{"garbage", func(t *testing.T, path string, _ Note) { write(t, path, "\x00\xffnot json") }},
		{"empty", func(t *testing.T, path string, _ Note) { write(t, path, "") }},
		{"truncated", func(t *testing.T, path string, _ Note) {
			b := read(t, path)
			write(t, path, string(b[:len(b)-1]))
		}},
		{"label made trusted by hand, with a duplicate", func(t *testing.T, path string, _ Note) {
			write(t, path, strings.Replace(string(read(t, path)), `"untrusted":true,`, `"untrusted":true,"untrusted":false,`, 1))
		}},
		{"unknown member", func(t *testing.T, path string, _ Note) {
			write(t, path, strings.Replace(string(read(t, path)), `"promoted":null`, `"promoted":null,"trusted":true`, 1))
		}},
		{"another note's id", func(t *testing.T, path string, n Note) {
			write(t, path, strings.Replace(string(read(t, path)), `"id":"`+n.ID+`"`, `"id":"other"`, 1))
		}},
		{"a symbolic link", func(t *testing.T, path string, _ Note) {
			rm(t, path)
			target := filepath.Join(t.TempDir(), "elsewhere.json")
			b, _ := encodeNote(Note{ID: filepath.Base(strings.TrimSuffix(path, ".json")), Title: "alpha", Text: "alpha",
				Label: label(t, wire.Public, false, "forger", 9)})
			write(t, target, string(b))
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, path string, _ Note) {
			rm(t, path)
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, path string, _ Note) {
			rm(t, path)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	l := label(t, wire.Private, true, "s1", 10)
	for _, c := range damages {
		t.Run(c.name, func(t *testing.T) {
			s, notesDir, indexDir := open(t)
			good, err := s.Put("", "alpha", "alpha good", l)
			if err != nil {
				t.Fatal(err)
			}
			bad, err := s.Put("", "alpha", "alpha bad", l)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(notesDir, bad.ID+".json")
			c.damage(t, path, bad)

			check := func(when string, s *Store) {
				t.Helper()
				if got, err := s.Search("alpha", 10); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], good) {
					t.Errorf("%s: Search = %v, %v; want only the good note", when, ids(got), err)
				}
				if got, err := s.List(); err != nil || len(got) != 1 || got[0].ID != good.ID {
					t.Errorf("%s: List = %v, %v; want only the good note", when, ids(got), err)
				}
				_, err := s.Get(bad.ID)
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "see docs/runbook.md#note-damaged") {
					t.Errorf("%s: Get = %v; want ErrDamaged naming %s and the runbook", when, err, path)
				}
				if d := s.Damaged(); !reflect.DeepEqual(d, []string{path}) {
					t.Errorf("%s: Damaged = %v, want [%s]", when, d, path)
				}
				if _, err := s.Promote(bad.ID, "owner", 1); !errors.Is(err, ErrDamaged) {
					t.Errorf("%s: Promote = %v, want ErrDamaged", when, err)
				}
				if s.Len() != 1 {
					t.Errorf("%s: Len = %d, want 1", when, s.Len())
				}
			}
			// Found by a rebuild (the file changed behind the index's
			// back), which records it in the index...
			s2, rebuilt, err := Open(notesDir, indexDir)
			if err != nil || !rebuilt {
				t.Fatalf("reopen: rebuilt %v, %v", rebuilt, err)
			}
			check("after a rebuild", s2)
			s3, rebuilt, err := Open(notesDir, indexDir)
			if err != nil || rebuilt {
				t.Fatalf("reopen: rebuilt %v, %v", rebuilt, err)
			}
			check("from the index", s3)
			// ...and on reading, by the store that was running.
			check("found on reading", s)

			if c.name == "a directory" {
				return // a note cannot be renamed over a directory; the owner removes it
			}
			// Replacing it is refused, whoever writes (issue 29, class 1):
			// it would erase the bytes a repair needs. The owner deletes it.
			before := snapshot(path)
			for _, untrusted := range []bool{false, true} {
				if _, err := s3.Put(bad.ID, "alpha", "alpha replaced", label(t, wire.Public, untrusted, "w", 3)); !errors.Is(err, ErrNotReplaced) {
					t.Fatalf("replacing a damaged note (untrusted %v): %v", untrusted, err)
				}
			}
			if after := snapshot(path); !bytes.Equal(before, after) || len(s3.Damaged()) != 1 {
				t.Errorf("after refusing to replace: %q, was %q; Damaged %v", after, before, s3.Damaged())
			}
			if err := s3.Delete(bad.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Delete left %s: %v", path, err)
			}
		})
	}
}

// TestDeleteDamaged: the owner can delete a damaged note file.
func TestDeleteDamaged(t *testing.T) {
	s, notesDir, indexDir := open(t)
	n, err := s.Put("", "x", "y", label(t, wire.Public, false, "s", 1))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(notesDir, n.ID+".json"), "{")
	if err := s.Rebuild(); err != nil || len(s.Damaged()) != 1 {
		t.Fatalf("Rebuild: %v, Damaged %v", err, s.Damaged())
	}
	if err := s.Delete(n.ID); err != nil {
		t.Fatal(err)
	}
	if len(s.Damaged()) != 0 {
		t.Errorf("Damaged after Delete: %v", s.Damaged())
	}
	if _, rebuilt, err := Open(notesDir, indexDir); err != nil || rebuilt {
		t.Errorf("reopen after Delete: rebuilt %v, %v", rebuilt, err)
	}
}

// TestDamagedRestored: a damaged note whose file is restored by hand is
// valid again for Get, and indexed again (Promote and Search see it).
func TestDamagedRestored(t *testing.T) {
	s, notesDir, indexDir := open(t)
	l := label(t, wire.Public, true, "s", 1)
	n, err := s.Put("", "alpha", "beta", l)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(notesDir, n.ID+".json")
	good := read(t, path)
	write(t, path, "{")
	if _, err := s.Get(n.ID); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Get of the damaged note: %v", err)
	}
	write(t, path, string(good))
	if got, err := s.Get(n.ID); err != nil || !reflect.DeepEqual(got, n) || len(s.Damaged()) != 0 {
		t.Fatalf("Get of the restored note: %+v, %v, Damaged %v", got, err, s.Damaged())
	}
	p, err := s.Promote(n.ID, "owner", 2)
	if err != nil || p.Untrusted() {
		t.Fatalf("Promote: %+v, %v", p, err)
	}
	if got := mustSearch(t, s, "alpha beta"); len(got) != 1 || !reflect.DeepEqual(got[0], p) {
		t.Errorf("Search = %+v, want the promoted note", got)
	}
	if _, rebuilt, err := Open(notesDir, indexDir); err != nil || rebuilt {
		t.Errorf("reopen: rebuilt %v, %v", rebuilt, err)
	}
}
