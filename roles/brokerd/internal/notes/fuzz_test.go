package notes

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"boxmaker/wire"
)

// FuzzNoteFile: the note decoder never panics, and whatever it accepts
// re-encodes to the same bytes and decodes to the same note.
func FuzzNoteFile(f *testing.F) {
	l := label(f, wire.Private, true, "s1", 1_700_000_000_000)
	for _, n := range []Note{
		{ID: "n-1", Title: "t", Text: "x", Label: l},
		{ID: "n-2", Title: "label: trusted", Text: "\x00\"label\":{}\n", Label: l, Promoted: &Promotion{"owner", 5}},
	} {
		b, err := encodeNote(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"id":"n-1","title":"t","text":"x","label":{"taint":"public","untrusted":false,"untrusted":true,"session":"s","written_at":"2026-09-17T08:05:00.000Z"},"promoted":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeNote(b)
		if err != nil {
			return
		}
		out, err := encodeNote(n)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", b, err)
		}
		if string(out) != string(b) {
			t.Fatalf("accepted %q, re-encoded as %q", b, out)
		}
		again, err := decodeNote(out)
		if err != nil || !reflect.DeepEqual(again, n) {
			t.Fatalf("re-decoded %+v, %v; want %+v", again, err, n)
		}
	})
}

// FuzzIndexFile: the index parser never panics; whatever it accepts
// re-encodes to the same bytes (so it is as consistent as what encodeIndex
// writes); and an accepted index file under a real notes directory is used
// by Open only if it is that directory's own index, else it is rebuilt;
// either way Search then agrees with the notes.
func FuzzIndexFile(f *testing.F) {
	dir := f.TempDir()
	notesDir, indexDir := filepath.Join(dir, "notes"), filepath.Join(dir, "index")
	s, _, err := Open(notesDir, indexDir)
	if err != nil {
		f.Fatal(err)
	}
	l := label(f, wire.Secret, true, "s1", 42)
	model := map[string]Note{}
	for _, tt := range [][2]string{{"alpha", "alpha beta"}, {"Beta", "gamma"}, {"x", "alpha alpha"}} {
		n, err := s.Put("", tt[0], tt[1], l)
		if err != nil {
			f.Fatal(err)
		}
		model[n.ID] = n
	}
	own := encodeIndex(s.x)
	f.Add(own)
	f.Add(own[:len(own)/2])
	f.Add([]byte(indexMagic + "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"))
	_, body, _ := bytes.Cut(own[len(indexMagic):], []byte{'\n'})
	f.Add(body)
	f.Add([]byte("note a 1 1 2026-09-17T08:05:00.000Z\ndamaged b 0 -1\nterm x 0:1:0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The input as a whole file, and as a body under its right
		// checksum, so that the fuzzer reaches the body's parser.
		sum := sha256.Sum256(b)
		checkIndexFile(t, b, own, notesDir, indexDir, model)
		checkIndexFile(t, fmt.Appendf(nil, "%ssha256 %x\n%s", indexMagic, sum, b), own, notesDir, indexDir, model)
	})
}

func checkIndexFile(t *testing.T, b, own []byte, notesDir, indexDir string, model map[string]Note) {
	x, err := parseIndex(b)
	if err != nil {
		// Open rebuilds on any parse error (TestIndexRebuiltWhen runs
		// that path through Open); opening here for every input would
		// spend the fuzzing time on fsync.
		return
	}
	if out := encodeIndex(x); string(out) != string(b) {
		t.Fatalf("accepted %q, re-encoded as %q", b, out)
	}
	write(t, filepath.Join(indexDir, indexName), string(b))
	s2, rebuilt, err := Open(notesDir, indexDir)
	if err != nil {
		t.Fatalf("Open with a fuzzed index: %v", err)
	}
	if !rebuilt && string(b) != string(own) {
		t.Fatalf("Open used an index that is not the notes' own: %q", b)
	}
	for _, q := range []string{"alpha", "beta", "gamma alpha", "x"} {
		got, err := s2.Search(q, 10)
		if want := oracle(model, q, 10); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Search(%q) = %v, %v; want %v", q, ids(got), err, ids(want))
		}
	}
}
