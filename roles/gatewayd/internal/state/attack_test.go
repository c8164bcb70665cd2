package state

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/runbook"
)

// A valid state file with one thread, one approval and one cursor.
const goodState = `{"threads":[{"root":"r1","channel":"c1","owner":"o1","session":"chat-1"}],` +
	`"approvals":[{"id":41,"broker":"b","post":"p41","channel":"c1","text":"approve?","expires":"1970-01-01T00:00:02.000Z","ended":false}],` +
	`"cursors":[{"channel":"c1","at":5000,"seen":[]}]}` + "\n"

// openWithin runs Open, and fails the test when it does not return in
// time (a FIFO blocks an open for reading until a writer comes).
func openWithin(t *testing.T, path string) (*State, error) {
	t.Helper()
	type result struct {
		s   *State
		err error
	}
	done := make(chan result, 1)
	go func() { s, err := Open(path); done <- result{s, err} }()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(2 * time.Second):
		// Unblock the open so the goroutine ends.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("Open(%s) blocked", path)
		return nil, nil
	}
}

// TestOpenRefusesWhatIsNotTheFile: gatewayd's state is a regular file of
// its own at its path. A link (to a good state file, or to nothing), a
// directory, a FIFO or a socket there is refused with its reason, never
// read through, taken for "no state yet" or waited on.
func TestOpenRefusesWhatIsNotTheFile(t *testing.T) {
	cases := []struct {
		name   string
		make   func(t *testing.T, path string)
		anchor string
	}{
		{"link to a good state file", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "other.json")
			os.WriteFile(other, []byte(goodState), 0o600)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}, runbook.See("gatewayd-state-not-a-file")},
		{"dangling link", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "nothing"), path); err != nil {
				t.Fatal(err)
			}
		}, runbook.See("gatewayd-state-not-a-file")},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, runbook.See("gatewayd-state-not-a-file")},
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, runbook.See("gatewayd-state-not-a-file")},
		{"socket", func(t *testing.T, path string) {
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
		}, runbook.See("gatewayd-state-not-a-file")},
		{"unreadable", func(t *testing.T, path string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads a file of mode 0000")
			}
			os.WriteFile(path, []byte(goodState), 0o000)
		}, runbook.See("gatewayd-state-damaged")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Short: a socket's path is at most 108 bytes.
			dir, err := os.MkdirTemp("", "gws")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			path := filepath.Join(dir, "state.json")
			c.make(t, path)
			s, err := openWithin(t, path)
			if err == nil {
				t.Fatalf("Open accepted it: %d threads", len(s.threads))
			}
			if !strings.Contains(err.Error(), c.anchor) {
				t.Fatalf("Open: %v; want %s", err, c.anchor)
			}
		})
	}
}

// TestDuplicateEntriesAreRefused: a file with two entries for one thread
// root, approval id, approval post or channel is damaged: which one counts
// would be the last one read, and the approval table would disagree with
// its index by post.
func TestDuplicateEntriesAreRefused(t *testing.T) {
	const th = `{"root":"r1","channel":"c1","owner":"o1","session":"chat-1"}`
	ap := func(id, post string) string {
		return `{"id":` + id + `,"broker":"b","post":"` + post + `","channel":"c1","text":"t","expires":"1970-01-01T00:00:02.000Z","ended":false}`
	}
	const cu = `{"channel":"c1","at":5000,"seen":[]}`
	for name, content := range map[string]string{
		"thread twice":        `{"threads":[` + th + `,` + th + `],"approvals":[],"cursors":[]}`,
		"approval id twice":   `{"threads":[],"approvals":[` + ap("1", "p1") + `,` + ap("1", "p2") + `],"cursors":[]}`,
		"approval post twice": `{"threads":[],"approvals":[` + ap("1", "p1") + `,` + ap("2", "p1") + `],"cursors":[]}`,
		"cursor twice":        `{"threads":[],"approvals":[],"cursors":[` + cu + `,` + cu + `]}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			os.WriteFile(p, []byte(content+"\n"), 0o600)
			_, err := Open(p)
			if err == nil || !strings.Contains(err.Error(), "see docs/runbook.md#gatewayd-state-damaged") {
				t.Fatalf("Open: %v; want it refused as damaged", err)
			}
		})
	}
}

// TestWriteDoesNotFollowALink: a link planted at the temporary file's name
// is not written through (its target is untouched) and does not become
// the state file; a leftover temporary file does not stop the write.
func TestWriteDoesNotFollowALink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("the owner's file\n"), 0o600)
	if err := os.Symlink(victim, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := s.StartCursor("c1", 1000); err != nil {
		t.Fatalf("a write over a planted link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "the owner's file\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the state file is %v (%v); want a regular file", fi.Mode(), err)
	}
	// A leftover temporary file (a crash between create and rename).
	os.WriteFile(path+".tmp", []byte("half"), 0o644)
	if err := s.StartCursor("c2", 1000); err != nil {
		t.Fatalf("a write over a leftover temporary file: %v", err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Cursor("c2"); !ok {
		t.Fatal("the write over a leftover temporary file was lost")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v, %v", fi.Mode(), err)
	}
}

// FuzzOpen: any bytes in the state file are refused or loaded; what is
// loaded is written back as it was read (the file is canonical), and read
// again to the same tables.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(goodState))
	f.Add([]byte(`{"threads":[],"approvals":[],"cursors":[]}` + "\n"))
	f.Add([]byte(`{"threads":[],"approvals":[{"id":1,"broker":"b","post":"p","channel":"c","text":"t","expires":"1970-01-01T00:00:00.002Z","ended":true}],"cursors":[{"channel":"c","at":1,"seen":[{"id":"x","at":1}]}]}`))
	f.Add([]byte(`{"threads":[],"approvals":[{"id":1,"broker":"b","post":"p","channel":"c","text":"t","expires":"1970-01-01T00:00:00.002Z","ended":false,"answer":{"answer":"refused","by":"u","post":"p","reason":"no"}}],"cursors":[]}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if err != nil {
			if !strings.Contains(err.Error(), runbook.See("gatewayd-state-damaged")) {
				t.Fatalf("refused without a runbook line: %v", err)
			}
			return
		}
		s.mu.Lock()
		err = s.saveLocked()
		s.mu.Unlock()
		if err != nil {
			t.Fatalf("a loaded state cannot be written: %v", err)
		}
		again, err := Open(path)
		if err != nil {
			t.Fatalf("a written state does not load: %v", err)
		}
		if len(again.threads) != len(s.threads) || len(again.approvals) != len(s.approvals) ||
			len(again.byPost) != len(s.byPost) || len(again.cursors) != len(s.cursors) {
			t.Fatalf("tables differ after a write: %d/%d/%d/%d then %d/%d/%d/%d",
				len(s.threads), len(s.approvals), len(s.byPost), len(s.cursors),
				len(again.threads), len(again.approvals), len(again.byPost), len(again.cursors))
		}
	})
}
