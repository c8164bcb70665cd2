package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"boxmaker/wire"
)

// TestRememberGuard is issue 29's class 1 example: remember from an
// untrusted session may replace a note only if that note reads back as
// untrusted and not promoted. A note file that cannot be read is never
// replaced, by any session: the replacement would erase the owner's text,
// its promotion, and the damaged bytes a repair needs.
func TestRememberGuard(t *testing.T) {
	damage := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"not JSON", func(t *testing.T, path string) { writeNote(t, path, "\x00 not a note") }},
		{"cut short", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			writeNote(t, path, string(b[:len(b)/2]))
		}},
		{"a link", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere.json")
			b, _ := os.ReadFile(path)
			writeNote(t, target, string(b))
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"one brace", func(t *testing.T, path string) { writeNote(t, path, "{") }},
	}
	for _, d := range damage {
		for _, session := range []string{"chat-web", "chat-clean"} {
			t.Run(d.name+"/"+session, func(t *testing.T) {
				h := start(t, memoryGrants())
				id := h.remember("chat-a", 1, "Plants", "Water them on Fridays.")
				if _, ok := h.call(wire.ToolRequest{Session: sid(t, "chat-web"), Call: 1, Tool: "http_fetch",
					Arguments: `{"url":"https://example.com/"}`}).(wire.ResultResponse); !ok {
					t.Fatal("the fetch did not run")
				}
				path := filepath.Join(h.cfg.Paths.Home, "memory", "notes", id+".json")
				d.make(t, path)
				before := readLink(t, path)
				over := h.call(wire.ToolRequest{Session: sid(t, session), Call: 2, Tool: "remember",
					Arguments: `{"id":"` + id + `","title":"Plants","text":"Never water them."}`})
				f, ok := over.(wire.FailedResponse)
				want := "note " + id + " cannot be read, so it is not replaced; remember it as a new note instead; see docs/runbook.md#note-damaged"
				if !ok || f.Message != want {
					t.Fatalf("replacing a damaged note from %s: %#v; want %q", session, over, want)
				}
				if after := readLink(t, path); !bytes.Equal(before, after) {
					t.Fatalf("the damaged file changed: %q, was %q", after, before)
				}
			})
		}
	}
}

func writeNote(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// readLink is what is at path: a link's target name, or the file's bytes.
func readLink(t *testing.T, path string) []byte {
	t.Helper()
	if target, err := os.Readlink(path); err == nil {
		return []byte("link to " + target)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRememberPromotionRace: an owner's promotion landing while an
// untrusted session's remember of the same note is being decided is never
// erased. Either the remember came first (and the promotion is of its
// text) or it is refused; a note that was promoted stays promoted.
func TestRememberPromotionRace(t *testing.T) {
	h := start(t, memoryGrants())
	if _, ok := h.call(wire.ToolRequest{Session: sid(t, "chat-web"), Call: 1, Tool: "http_fetch",
		Arguments: `{"url":"https://example.com/"}`}).(wire.ResultResponse); !ok {
		t.Fatal("the fetch did not run")
	}
	call := uint64(2)
	for round := range 100 {
		id := h.remember("chat-web", call, "Plants", "Water them on Fridays.")
		call++
		seen := h.label(id).Version()
		var wg sync.WaitGroup
		var over, promote any
		wg.Add(2)
		go func() {
			defer wg.Done()
			over = h.call(wire.ToolRequest{Session: sid(t, "chat-web"), Call: wire.CallID(call), Tool: "remember",
				Arguments: `{"id":"` + id + `","title":"Plants","text":"Never water them."}`})
		}()
		go func() { defer wg.Done(); promote = h.admin(wire.NotePromote{ID: id, Version: seen}) }()
		wg.Wait()
		call++
		n := h.label(id)
		_, replaced := over.(wire.ResultResponse)
		_, refused := promote.(wire.WireError)
		switch {
		case refused && replaced && n.Promoted == nil && n.Text == "Never water them.":
			// The remember came first; the promotion was of a version gone.
		case !refused && !replaced && n.Promoted != nil && n.Text == "Water them on Fridays.":
			// The promotion came first; the untrusted remember was refused.
		default:
			t.Fatalf("round %d: promote %#v, remember %#v; the note is promoted %v with %q",
				round, promote, over, n.Promoted != nil, n.Text)
		}
	}
}
