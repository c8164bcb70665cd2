package notes

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"boxmaker/wire"
)

func label(t testing.TB, taint wire.DataClass, untrusted bool, session string, ms uint64) Label {
	t.Helper()
	id, err := wire.NewSessionID(session)
	if err != nil {
		t.Fatal(err)
	}
	return Label{Taint: taint, Untrusted: untrusted, Session: id, WrittenAt: wire.Timestamp(ms)}
}

// open opens a store in fresh directories under t.TempDir().
func open(t testing.TB) (*Store, string, string) {
	t.Helper()
	home := t.TempDir()
	notesDir, indexDir := filepath.Join(home, "memory", "notes"), filepath.Join(home, "index")
	s, rebuilt, err := Open(notesDir, indexDir)
	if err != nil {
		t.Fatal(err)
	}
	if !rebuilt {
		t.Fatal("a new store's missing index was not reported as rebuilt")
	}
	return s, notesDir, indexDir
}

func TestRoundTrip(t *testing.T) {
	s, notesDir, indexDir := open(t)
	web := label(t, wire.Public, true, "s-web", 1_000)
	clean := label(t, wire.Private, false, "s-clean", 2_000)

	a, err := s.Put("", "Coffee", "the owner likes espresso", web)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.ID, "n-") || len(a.ID) != 14 || !wire.ValidID(a.ID) {
		t.Errorf("new id %q is not n- and 12 hex digits", a.ID)
	}
	if !a.Untrusted() || a.Promoted != nil || a.Label != web {
		t.Errorf("stored note %+v: want the web label, untrusted, not promoted", a)
	}
	b, err := s.Put("", "Tea", "green tea in the afternoon", clean)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []Note{a, b} {
		got, err := s.Get(n.ID)
		if err != nil || !reflect.DeepEqual(got, n) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", n.ID, got, err, n)
		}
	}
	if l, err := s.List(); err != nil || len(l) != 2 || l[0].ID != b.ID || l[1].ID != a.ID {
		t.Errorf("List = %+v, %v; want tea (newer) then coffee", l, err)
	}

	// Promotion clears the mark and keeps the label as written.
	p, err := s.Promote(a.ID, "owner", 3_000)
	if err != nil {
		t.Fatal(err)
	}
	if p.Untrusted() || p.Label != web || p.Promoted == nil || *p.Promoted != (Promotion{"owner", 3_000}) {
		t.Errorf("promoted note %+v", p)
	}
	if got, _ := s.Get(a.ID); !reflect.DeepEqual(got, p) {
		t.Errorf("Get after Promote = %+v, want %+v", got, p)
	}

	// A promoted note is not replaced by an untrusted writer (put_test.go
	// has the guard's table); a clean one's replacement is the new
	// writer's wholly: its label, no promotion.
	if _, err := s.Put(a.ID, "Coffee", "the owner likes ristretto", web); !errors.Is(err, ErrProtected) {
		t.Fatalf("an untrusted replace of a promoted note: %v", err)
	}
	r, err := s.Put(a.ID, "Coffee", "the owner likes ristretto", label(t, wire.Public, false, "chat-2", 4))
	if err != nil {
		t.Fatal(err)
	}
	if r.Promoted != nil || r.Label.Session.String() != "chat-2" {
		t.Errorf("replacement kept the promotion or lost the label: %+v", r)
	}
	r2, err := s.Put(a.ID, "Coffee", "decaf", clean)
	if err != nil || r2.Label != clean || r2.Untrusted() {
		t.Errorf("replacement by a clean session = %+v, %v; want the clean label", r2, err)
	}
	if got, _ := s.Search("espresso", 10); len(got) != 0 {
		t.Errorf("the replaced text is still found: %+v", got)
	}
	if got, _ := s.Search("decaf", 10); len(got) != 1 || !reflect.DeepEqual(got[0], r2) {
		t.Errorf("Search(decaf) = %+v, want the replacement", got)
	}

	// Reopened from disk, the same notes (the index is not rebuilt).
	s2, rebuilt, err := Open(notesDir, indexDir)
	if err != nil || rebuilt {
		t.Fatalf("reopen: rebuilt %v, %v", rebuilt, err)
	}
	if got, _ := s2.Get(a.ID); !reflect.DeepEqual(got, r2) {
		t.Errorf("after reopening, Get = %+v, want %+v", got, r2)
	}

	if err := s.Delete(a.ID); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Get":     second(s.Get(a.ID)),
		"Delete":  s.Delete(a.ID),
		"Promote": second(s.Promote(a.ID, "owner", 4_000)),
		"Put":     second(s.Put(a.ID, "x", "y", clean)),
		"Put new": second(s.Put("n-000000000000", "x", "y", clean)),
	} {
		if !errors.Is(err, ErrNoNote) {
			t.Errorf("%s of a deleted note: %v, want ErrNoNote", name, err)
		}
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1", s.Len())
	}
	if _, err := os.Stat(filepath.Join(notesDir, a.ID+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted note's file is still there: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

func TestPutRefuses(t *testing.T) {
	s, notesDir, _ := open(t)
	good := label(t, wire.Private, false, "s1", 1)
	existing, err := s.Put("", "kept", "kept", good)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, id, title, text string
		l                     Label
		want                  error
	}{
		{"title too long", "", strings.Repeat("t", MaxTitleBytes+1), "x", good, ErrTooLarge},
		{"text too long", "", "x", strings.Repeat("é", MaxTextBytes/2+1), good, ErrTooLarge},
		{"replacement too long", existing.ID, "x", strings.Repeat("a", MaxTextBytes+1), good, ErrTooLarge},
		{"title invalid UTF-8", "", "a\xffb", "x", good, ErrInvalid},
		{"text invalid UTF-8", "", "x", "\xed\xa0\x80", good, ErrInvalid},
		{"id upper case", "N-1", "x", "y", good, ErrInvalid},
		{"id with a slash", "../x", "x", "y", good, ErrInvalid},
		{"id too long", strings.Repeat("a", 65), "x", "y", good, ErrInvalid},
		{"no taint", "", "x", "y", Label{Session: good.Session}, ErrInvalid},
		{"no session", "", "x", "y", Label{Taint: wire.Public}, ErrInvalid},
		{"time after 9999", "", "x", "y", Label{Taint: wire.Public, Session: good.Session, WrittenAt: 1 << 60}, ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.Put(c.id, c.title, c.text, c.l); !errors.Is(err, c.want) {
				t.Errorf("Put: %v, want %v", err, c.want)
			}
		})
	}
	ents, _ := os.ReadDir(notesDir)
	if len(ents) != 1 || s.Len() != 1 {
		t.Errorf("refused Puts left files or notes: %d files, Len %d", len(ents), s.Len())
	}
	if got, _ := s.Get(existing.ID); !reflect.DeepEqual(got, existing) {
		t.Errorf("a refused replacement changed the note: %+v", got)
	}
	// Exactly at the limits is accepted.
	if _, err := s.Put("", strings.Repeat("t", MaxTitleBytes), strings.Repeat("x", MaxTextBytes), good); err != nil {
		t.Errorf("Put at the limits: %v", err)
	}
	for _, c := range []struct{ name, by string }{{"empty", ""}, {"space", "a b"}, {"newline", "a\nb"}, {"long", strings.Repeat("a", 65)}} {
		if _, err := s.Promote(existing.ID, c.by, 5); !errors.Is(err, ErrInvalid) {
			t.Errorf("Promote by %s name: %v, want ErrInvalid", c.name, err)
		}
	}
	for _, q := range []string{"", "  ", "!?.,", "\x00"} {
		if _, err := s.Search(q, 5); !errors.Is(err, ErrInvalid) {
			t.Errorf("Search(%q): %v, want ErrInvalid", q, err)
		}
	}
	if _, err := s.Search("kept", 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Search with limit 0: %v, want ErrInvalid", err)
	}
}

func TestModes(t *testing.T) {
	s, notesDir, indexDir := open(t)
	n, err := s.Put("", "x", "y", label(t, wire.Secret, false, "s", 1))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		notesDir: os.ModeDir | 0o700, indexDir: os.ModeDir | 0o700,
		filepath.Join(notesDir, n.ID+".json"): 0o600, filepath.Join(indexDir, indexName): 0o600,
	} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
}

// TestConcurrent runs writers and readers at once; -race checks the locking,
// and at the end the index on disk must describe the notes exactly.
func TestConcurrent(t *testing.T) {
	s, notesDir, indexDir := open(t)
	l := label(t, wire.Private, false, "s", 1)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				n, err := s.Put("", "w", "alpha beta", l)
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 == w%3 {
					if err := s.Delete(n.ID); err != nil {
						t.Error(err)
					}
				}
				if _, err := s.Search("alpha", 5); err != nil {
					t.Error(err)
				}
				if _, err := s.List(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	want := s.Len()
	s2, rebuilt, err := Open(notesDir, indexDir)
	if err != nil || rebuilt || s2.Len() != want {
		t.Errorf("reopened: rebuilt %v, Len %d (want %d), %v", rebuilt, s2.Len(), want, err)
	}
}

// TestPromoteSeen: only the version the owner saw is promoted; a note
// written again since is refused with ErrChanged and left as it is. The
// version covers the label as well as the words.
func TestPromoteSeen(t *testing.T) {
	s, _, _ := open(t)
	n, err := s.Put("", "t", "seen text", label(t, wire.Private, true, "chat-1", 1_000))
	if err != nil {
		t.Fatal(err)
	}
	seen := n.Version()
	again, err := s.Put(n.ID, "t", "swapped text", label(t, wire.Private, true, "chat-1", 2_000))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PromoteSeen(n.ID, seen, "owner", 3_000); !errors.Is(err, ErrChanged) {
		t.Fatalf("PromoteSeen of an old version: %v", err)
	}
	if got, _ := s.Get(n.ID); got.Promoted != nil {
		t.Fatal("an old version's promotion changed the note")
	}
	relabelled := again
	relabelled.Label.Untrusted = false
	if relabelled.Version() == again.Version() {
		t.Fatal("the version does not cover the label")
	}
	p, err := s.PromoteSeen(n.ID, again.Version(), "owner", 3_000)
	if err != nil || p.Promoted == nil || p.Text != "swapped text" || p.Untrusted() {
		t.Fatalf("PromoteSeen of the current version: %+v %v", p, err)
	}
	if p.Version() != again.Version() {
		t.Fatal("promotion changed the version")
	}
}
