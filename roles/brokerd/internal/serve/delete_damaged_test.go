package serve

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"boxmaker/wire"
)

// TestOwnerDeletesADamagedNote: a note that cannot be read is never
// replaced (TestRememberGuard), so the owner's delete is the one way to
// remove it; it must work for every kind of damage, audited first, and
// must not follow a link to delete something else.
func TestOwnerDeletesADamagedNote(t *testing.T) {
	damage := []struct {
		name string
		make func(t *testing.T, path string) (elsewhere string)
	}{
		{"not JSON", func(t *testing.T, path string) string { writeNote(t, path, "\x00 not a note"); return "" }},
		{"a link", func(t *testing.T, path string) string {
			target := filepath.Join(t.TempDir(), "elsewhere.json")
			b, _ := os.ReadFile(path)
			writeNote(t, target, string(b))
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			return target
		}},
		{"a directory", func(t *testing.T, path string) string {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			h := start(t, memoryGrants())
			id := h.remember("chat-a", 1, "Plants", "Water them on Fridays.")
			path := filepath.Join(h.cfg.Paths.Home, "memory", "notes", id+".json")
			elsewhere := d.make(t, path)
			if got := h.admin(wire.NoteDelete{ID: id}); got != (wire.OK{}) {
				t.Fatalf("deleting a damaged note: %#v", got)
			}
			evs := h.events()
			if del, ok := evs[len(evs)-1].(wire.NoteDeletedEvent); !ok || del.Note != id {
				t.Fatalf("the last audit event: %#v", evs[len(evs)-1])
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the damaged note is still there: %v", err)
			}
			if elsewhere != "" {
				if _, err := os.Stat(elsewhere); err != nil {
					t.Fatalf("the link's target was removed: %v", err)
				}
			}
			if got, ok := h.admin(wire.NoteDelete{ID: id}).(wire.WireError); !ok || got.Code != wire.NoSuchNote {
				t.Fatalf("deleting it again: %#v", got)
			}
		})
	}
}
