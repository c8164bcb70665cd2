package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"boxmaker/wire"
)

// TestBindings: a session is bound once, read back exactly, ended; an
// interactive session has none; a damaged or foreign file is an error, never
// "interactive".
func TestBindings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job-sessions")
	b := NewBindings(dir)
	id, _ := wire.NewSessionID("job-nightly-1")
	if _, ok, err := b.Lookup(id); ok || err != nil {
		t.Fatalf("before Bind: %v %v", ok, err)
	}
	if err := b.Bind(id, Binding{Job: "nightly", DenyAsks: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir %v %v", st.Mode(), err)
	}
	if bd, ok, err := b.Lookup(id); !ok || err != nil || bd != (Binding{Job: "nightly", DenyAsks: true}) {
		t.Fatalf("Lookup %+v %v %v", bd, ok, err)
	}
	if err := b.Bind(id, Binding{Job: "other"}); !errors.Is(err, ErrBound) {
		t.Fatalf("second Bind: %v", err)
	}
	if err := b.End(id); err != nil {
		t.Fatal(err)
	}
	if bd, _, _ := b.Lookup(id); bd != (Binding{Job: "nightly", DenyAsks: true, Ended: true}) {
		t.Fatalf("after End %+v", bd)
	}
	chat, _ := wire.NewSessionID("chat-1")
	if err := b.End(chat); err == nil {
		t.Fatal("End of an unbound session succeeded")
	}
	for _, bad := range []string{"", "{", `{"job":"x"}x`, `{"job":"Bad Name","deny_asks":false,"ended":false}`,
		`{"job":"x","deny_asks":false,"ended":false,"extra":1}`, `{"deny_asks":false,"ended":false,"job":""}`} {
		if err := os.WriteFile(filepath.Join(dir, "chat-1.json"), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := b.Lookup(chat); err == nil || !ok {
			t.Errorf("damaged %q: ok %v err %v", bad, ok, err)
		}
	}
	if err := b.Bind(chat, Binding{Job: "x", Ended: true}); err == nil {
		t.Fatal("Bind of an ended binding succeeded")
	}
}
