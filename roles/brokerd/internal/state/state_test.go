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

func sid(t *testing.T, s string) wire.SessionID {
	t.Helper()
	id, err := wire.NewSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestAbsentIsPrivateTrusted(t *testing.T) {
	s := New(t.TempDir())
	st, exists, err := s.Read(sid(t, "chat-1"))
	if err != nil || exists || st != (policy.State{Taint: wire.Private}) {
		t.Fatalf("got %+v %v %v", st, exists, err)
	}
}

func TestWriteIsCanonicalAndAtomic(t *testing.T) {
	dir := t.TempDir()
	s := New(dir)
	id := sid(t, "chat-1")
	if err := s.Write(id, policy.State{Taint: wire.Secret, Untrusted: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "chat-1.json"))
	if err != nil || string(data) != `{"taint":"secret","untrusted":true}` {
		t.Fatalf("file %q, %v", data, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "chat-1.json")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(dir, "chat-1.json.tmp")); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is left: %v", err)
	}
	st, exists, err := s.Read(id)
	if err != nil || !exists || st != (policy.State{Taint: wire.Secret, Untrusted: true}) {
		t.Fatalf("read back %+v %v %v", st, exists, err)
	}
}

func TestDamagedFilesAreErrors(t *testing.T) {
	dir := t.TempDir()
	s := New(dir)
	for name, content := range map[string]string{
		"newline":   `{"taint":"private","untrusted":false}` + "\n",
		"order":     `{"untrusted":false,"taint":"private"}`,
		"unknown":   `{"taint":"private","untrusted":false,"x":1}`,
		"case":      `{"Taint":"private","untrusted":false}`,
		"missing":   `{"taint":"private"}`,
		"bad-class": `{"taint":"topsecret","untrusted":false}`,
		"empty":     ``,
		"torn":      `{"taint":"pri`,
		"oversized": `{"taint":"private","untrusted":false}` + strings.Repeat(" ", stateFileMax),
	} {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, exists, err := s.Read(sid(t, name)); err == nil || !exists {
			t.Errorf("%s: %q read without error", name, content)
		}
	}
	// A directory where the file goes cannot be read either.
	os.Mkdir(filepath.Join(dir, "dir.json"), 0o700)
	if _, _, err := s.Read(sid(t, "dir")); err == nil || !strings.HasPrefix(err.Error(), "state: ") {
		t.Errorf("a directory read as %v", err)
	}
	// Nor a FIFO, and reading it does not wait for a writer.
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Read(sid(t, "fifo")); err == nil {
		t.Error("a FIFO read without error")
	}
}

func TestRaiseNeverLowers(t *testing.T) {
	for _, tc := range []struct {
		st        policy.State
		class     wire.DataClass
		untrusted bool
		want      policy.State
	}{
		{policy.State{Taint: wire.Private}, wire.Secret, false, policy.State{Taint: wire.Secret}},
		{policy.State{Taint: wire.Secret}, wire.Public, false, policy.State{Taint: wire.Secret}},
		{policy.State{Taint: wire.Private, Untrusted: true}, wire.Public, false, policy.State{Taint: wire.Private, Untrusted: true}},
		{policy.State{Taint: wire.Public}, wire.Public, true, policy.State{Taint: wire.Public, Untrusted: true}},
	} {
		if got := Raise(tc.st, tc.class, tc.untrusted); got != tc.want {
			t.Errorf("Raise(%+v, %v, %v) = %+v, want %+v", tc.st, tc.class, tc.untrusted, got, tc.want)
		}
	}
}

// TestLockSerialisesASession: read-raise-write under the lock from many
// goroutines never loses an update, and the lock table empties afterwards.
func TestLockSerialisesASession(t *testing.T) {
	s := New(t.TempDir())
	id := sid(t, "chat-1")
	var wg sync.WaitGroup
	counter := 0
	for range 50 {
		wg.Go(func() {
			unlock := s.Lock(id)
			defer unlock()
			st, _, err := s.Read(id)
			if err != nil {
				t.Error(err)
				return
			}
			counter++ // the race detector checks the lock covers this
			if err := s.Write(id, Raise(st, wire.Secret, false)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if counter != 50 {
		t.Fatalf("counter %d", counter)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.locks) != 0 {
		t.Fatalf("%d locks left", len(s.locks))
	}
}
