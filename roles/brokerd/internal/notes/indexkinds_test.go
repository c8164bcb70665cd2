package notes

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// TestIndexFileKinds: the index is only a cache of the notes (they are the
// truth), but it decides what search and list can see. It is read without
// following a link and only as a regular file (issue 29, class 1): a FIFO
// must not stall brokerd's start, and a link to an index made elsewhere
// (one that hides a note) is not used. Either way the index is rebuilt
// from the notes, and the rebuilt one is a regular file again.
func TestIndexFileKinds(t *testing.T) {
	for _, kind := range []string{"fifo", "link to a forged index", "directory"} {
		t.Run(kind, func(t *testing.T) {
			s, notesDir, indexDir := open(t)
			for _, title := range []string{"kept", "hidden"} {
				if _, err := s.Put("", title, "about plants", label(t, wire.Private, false, "s", 1)); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(indexDir, indexName)
			switch kind {
			case "fifo":
				rm(t, path)
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
			case "link to a forged index":
				// An index made elsewhere, that knows none of the notes.
				other := t.TempDir()
				forgedNotes := filepath.Join(other, "notes")
				if err := os.MkdirAll(forgedNotes, 0o700); err != nil {
					t.Fatal(err)
				}
				if _, _, err := Open(forgedNotes, filepath.Join(other, "index")); err != nil {
					t.Fatal(err)
				}
				rm(t, path)
				if err := os.Symlink(filepath.Join(other, "index", indexName), path); err != nil {
					t.Fatal(err)
				}
			case "directory":
				rm(t, path)
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			type opened struct {
				s       *Store
				rebuilt bool
				err     error
			}
			done := make(chan opened, 1)
			go func() { s, r, err := Open(notesDir, indexDir); done <- opened{s, r, err} }()
			var o opened
			select {
			case o = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Open did not return: reading the index blocked")
			}
			if kind == "directory" {
				if o.err == nil {
					t.Fatal("Open went on with a directory where the index is written")
				}
				return
			}
			if o.err != nil || !o.rebuilt {
				t.Fatalf("Open: rebuilt %v, %v; want the index rebuilt", o.rebuilt, o.err)
			}
			if found, err := o.s.Search("plants", 10); err != nil || len(found) != 2 {
				t.Fatalf("search after the rebuild: %d notes, %v", len(found), err)
			}
			if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the index after the rebuild: %v %v", fi, err)
			}
		})
	}
}
