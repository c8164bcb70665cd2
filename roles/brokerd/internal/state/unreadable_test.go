package state

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

// Issue 29, class 1: a guard that cannot read what it guards refuses. The
// session state, the taint floor and a job's binding are each read before a
// decision; every kind of name that is there but cannot be read as the file
// brokerd writes must be an error, never "no file" (private, trusted,
// interactive). plant makes one kind at path; the valid file it may point
// at says secret and untrusted, so a test also catches a link that is
// followed.
var unreadableKinds = []struct {
	name  string
	plant func(t *testing.T, path string)
}{
	{"dangling link", func(t *testing.T, path string) { symlink(t, path+".gone", path) }},
	{"link to a valid file", func(t *testing.T, path string) {
		target := filepath.Join(t.TempDir(), "elsewhere.json")
		writeFile(t, target, `{"taint":"secret","untrusted":true}`)
		symlink(t, target, path)
	}},
	{"link to itself", func(t *testing.T, path string) { symlink(t, filepath.Base(path), path) }},
	{"directory", func(t *testing.T, path string) {
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}},
	{"fifo", func(t *testing.T, path string) {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}},
	{"empty", func(t *testing.T, path string) { writeFile(t, path, "") }},
	{"not JSON", func(t *testing.T, path string) { writeFile(t, path, "\x00\xff") }},
	{"too large", func(t *testing.T, path string) { writeFile(t, path, strings.Repeat(" ", stateFileMax+1)) }},
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadRefusesEveryUnreadableKind(t *testing.T) {
	for _, k := range unreadableKinds {
		t.Run(k.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(dir)
			id := sid(t, "chat-1")
			k.plant(t, filepath.Join(dir, "chat-1.json"))
			st, _, err := s.Read(id)
			if err == nil {
				t.Fatalf("Read gave %+v and no error; want the call denied (state_unreadable)", st)
			}
		})
	}
}

func TestHighestCountsEveryUnreadableKindAsSecret(t *testing.T) {
	for _, k := range unreadableKinds {
		t.Run(k.name, func(t *testing.T) {
			dir := t.TempDir()
			k.plant(t, filepath.Join(dir, "chat-1.json"))
			high, err := New(dir).Highest()
			if err != nil || high != wire.Secret {
				t.Fatalf("Highest: %v %v; want secret, what the file may have held", high, err)
			}
		})
	}
}

func TestOpenFloorRefusesEveryUnreadableKind(t *testing.T) {
	for _, k := range unreadableKinds {
		t.Run(k.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "floor.json")
			k.plant(t, path)
			f := OpenFloor(path)
			if f.Err() == nil || f.Missing() {
				t.Fatalf("OpenFloor: err %v, missing %v; want every call denied", f.Err(), f.Missing())
			}
		})
	}
}

func TestLookupRefusesEveryUnreadableKind(t *testing.T) {
	for _, k := range unreadableKinds {
		t.Run(k.name, func(t *testing.T) {
			dir := t.TempDir()
			k.plant(t, filepath.Join(dir, "job-1.json"))
			bd, ok, err := NewBindings(dir).Lookup(sid(t, "job-1"))
			if err == nil {
				t.Fatalf("Lookup: %+v %v and no error; want the call denied", bd, ok)
			}
		})
	}
}

// A link planted at a write's temporary name must not be written through:
// the write would truncate and fill whatever it names.
func TestWritesDoNotFollowALinkAtTheTemporaryName(t *testing.T) {
	id := sid(t, "chat-1")
	writes := map[string]func(dir string) error{
		"state": func(dir string) error {
			return New(dir).Write(id, policy.State{Taint: wire.Secret})
		},
		"floor": func(dir string) error {
			_, err := OpenFloor(filepath.Join(dir, "floor.json")).Raise(wire.Secret)
			return err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			writeFile(t, victim, "the owner's")
			final := filepath.Join(dir, "floor.json")
			if name == "state" {
				final = filepath.Join(dir, "chat-1.json")
			}
			symlink(t, victim, final+".tmp")
			if err := write(dir); err != nil {
				t.Fatalf("write: %v", err)
			}
			if got, _ := os.ReadFile(victim); string(got) != "the owner's" {
				t.Fatalf("the link's target was written: %q", got)
			}
			if fi, err := os.Lstat(final); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the file written is not a regular file: %v %v", fi, err)
			}
		})
	}
	t.Run("binding end", func(t *testing.T) {
		dir := t.TempDir()
		b := NewBindings(dir)
		id := sid(t, "job-1")
		if err := b.Bind(id, Binding{Job: "daily"}); err != nil {
			t.Fatal(err)
		}
		victim := filepath.Join(t.TempDir(), "victim")
		writeFile(t, victim, "the owner's")
		symlink(t, victim, filepath.Join(dir, "job-1.json.tmp"))
		if err := b.End(id); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(victim); string(got) != "the owner's" {
			t.Fatalf("the link's target was written: %q", got)
		}
	})
}

// End reads the binding and writes it ended; a Bind of the same id landing
// in between must not be lost or merged. With a lock held by both, many
// Ends at once all succeed and leave one ended binding of the job.
func TestBindingEndIsOneStep(t *testing.T) {
	dir := t.TempDir()
	b := NewBindings(dir)
	id := sid(t, "job-1")
	if err := b.Bind(id, Binding{Job: "daily", DenyAsks: true}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- b.End(id) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("End: %v", err)
		}
	}
	bd, ok, err := b.Lookup(id)
	if err != nil || !ok || bd != (Binding{Job: "daily", DenyAsks: true, Ended: true}) {
		t.Fatalf("after the Ends: %+v %v %v", bd, ok, err)
	}
}

// FuzzStateFile: whatever bytes a state file holds, Read either returns a
// valid state or an error, and never "no file".
func FuzzStateFile(f *testing.F) {
	f.Add([]byte(`{"taint":"secret","untrusted":true}`))
	f.Add([]byte(`{"taint":"private","untrusted":false}`))
	f.Add([]byte(`{"taint":"nope"}`))
	f.Add([]byte(``))
	id, err := wire.NewSessionID("chat-1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "chat-1.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, exists, err := New(dir).Read(id)
		if err == nil && (!exists || !st.Taint.Valid()) {
			t.Fatalf("%q: read as %+v, exists %v", data, st, exists)
		}
		bd, ok, err := NewBindings(dir).Lookup(id)
		if err == nil && (!ok || !wire.ValidID(bd.Job)) {
			t.Fatalf("%q: binding %+v, ok %v", data, bd, ok)
		}
	})
}
