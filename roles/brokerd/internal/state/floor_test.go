package state

import (
	"os"
	"path/filepath"
	"testing"

	"boxmaker/wire"
)

// TestFloor: a missing file is private; Raise writes only a higher floor,
// atomically, never lowers it, and a new Floor reads what was written.
func TestFloor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floor.json")
	f := OpenFloor(path)
	if l, err := f.Level(); l != wire.Private || err != nil {
		t.Fatalf("fresh floor %v %v", l, err)
	}
	if l, err := f.Raise(wire.Public); l != wire.Private || err != nil {
		t.Fatalf("raised to public: %v %v", l, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a floor that did not rise was written: %v", err)
	}
	for _, c := range []wire.DataClass{wire.Secret, wire.Private, wire.Public} {
		if l, err := f.Raise(c); l != wire.Secret || err != nil {
			t.Fatalf("after %v: %v %v", c, l, err)
		}
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != `{"taint":"secret"}` {
		t.Fatalf("file %q %v", data, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is left: %v", err)
	}
	if l, err := OpenFloor(path).Level(); l != wire.Secret || err != nil {
		t.Fatalf("reopened: %v %v", l, err)
	}
}

// TestFloorDamaged: a file that exists but is not a floor is an error, for
// Level and Raise alike, and nothing is written over it.
func TestFloorDamaged(t *testing.T) {
	for _, bad := range []string{"", `{"taint":"secret"}` + "\n", `{"taint":"Secret"}`, `{"taint":null}`, `{}`, string(make([]byte, 600))} {
		path := filepath.Join(t.TempDir(), "floor.json")
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		f := OpenFloor(path)
		if _, err := f.Level(); err == nil || f.Err() == nil {
			t.Errorf("%q was read as a floor", bad)
		}
		if _, err := f.Raise(wire.Secret); err == nil {
			t.Errorf("%q: raised", bad)
		}
		if data, _ := os.ReadFile(path); string(data) != bad {
			t.Errorf("%q was overwritten", bad)
		}
	}
	dir := filepath.Join(t.TempDir(), "floor.json")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if OpenFloor(dir).Err() == nil {
		t.Error("a directory was read as a floor")
	}
}

// TestFloorWriteFails: a floor that cannot be written still holds in
// memory, and the next Raise writes it.
func TestFloorWriteFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "floor.json")
	f := OpenFloor(path)
	// A directory that is not empty: the write's removal of what is left
	// at the temporary name fails, and so does the write.
	if err := os.MkdirAll(path+".tmp/in", 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Raise(wire.Secret); err == nil {
		t.Fatal("the write did not fail")
	}
	if l, err := f.Level(); l != wire.Secret || err != nil {
		t.Fatalf("in memory: %v %v", l, err)
	}
	os.RemoveAll(path + ".tmp")
	if l, err := f.Raise(wire.Public); l != wire.Secret || err != nil {
		t.Fatalf("retry: %v %v", l, err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"taint":"secret"}` {
		t.Fatalf("file %q", data)
	}
}

// TestHighest: the highest taint of the session files; a damaged one is
// secret; other files are not sessions.
func TestHighest(t *testing.T) {
	dir := t.TempDir()
	s := New(dir)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want wire.DataClass) {
		t.Helper()
		if got, err := s.Highest(); got != want || err != nil {
			t.Fatalf("got %v %v, want %v", got, err, want)
		}
	}
	check(wire.Private)
	write("a.json", `{"taint":"public","untrusted":true}`)
	write("b.json.tmp", `{"taint":"secret","untrusted":true}`)
	write("Not-A-Session.json", `x`)
	check(wire.Private)
	write("c.json", `{"taint":"secret","untrusted":false}`)
	check(wire.Secret)
	os.Remove(filepath.Join(dir, "c.json"))
	write("d.json", `{"taint":`)
	check(wire.Secret)
}
