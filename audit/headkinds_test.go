package audit

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// TestHeadFileKinds: the head brokerd keeps outside the log guards the
// log against truncation, so it is read as every state file is (issue 29,
// class 1): never through a symbolic link (a link to an older head, or to
// a file another user can write, would vouch for a log it does not
// describe; a dangling one would read as "no head"), and only as a
// regular file (a FIFO must not stall brokerd's start). Each refuses the
// start as unavailable, naming the path.
func TestHeadFileKinds(t *testing.T) {
	for _, kind := range []struct {
		name string
		make func(t *testing.T, head, good string)
	}{
		{"link to the real head", func(t *testing.T, head, good string) {
			moved := filepath.Join(t.TempDir(), "audit-head")
			if err := os.Rename(head, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, head); err != nil {
				t.Fatal(err)
			}
		}},
		{"dangling link", func(t *testing.T, head, _ string) {
			if err := os.Remove(head); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), head); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", func(t *testing.T, head, _ string) {
			if err := os.Remove(head); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(head, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			dir := logDir(t)
			head := filepath.Join(t.TempDir(), "audit-head")
			c := newClock(day0)
			w, _ := openT(t, dir, c, Options{HeadFile: head})
			if _, err := w.AppendEntry(decision("chat-1", 1, wire.OutcomeAllowed{})); err != nil {
				t.Fatal(err)
			}
			closeT(t, w)
			kind.make(t, head, "")
			done := make(chan error, 1)
			go func() {
				w, _, err := Open(dir, Options{HeadFile: head, Now: c.Now})
				if err == nil {
					w.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Open: %v, want ErrUnavailable", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Open did not return: reading the head blocked")
			}
		})
	}
}

// TestWritesDoNotFollowLinks: every name the audit writer writes (the
// day's log file it appends to, the head's temporary file, the lock) is
// brokerd's own; a link planted at one must not send audit records, a
// head or a truncation to the file it names. The writer refuses instead.
func TestWritesDoNotFollowLinks(t *testing.T) {
	for _, at := range []string{"log file", "head temporary", "lock"} {
		t.Run(at, func(t *testing.T) {
			dir := logDir(t)
			head := filepath.Join(t.TempDir(), "audit-head")
			c := newClock(day0)
			w, _ := openT(t, dir, c, Options{HeadFile: head})
			appendT(t, w, decision("chat-1", 1, wire.OutcomeAllowed{}))
			closeT(t, w)
			var name string
			switch at {
			case "log file":
				names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
				if err != nil || len(names) != 1 {
					t.Fatalf("log files %v %v", names, err)
				}
				name = names[0]
			case "head temporary":
				name = head + ".new"
			case "lock":
				name = filepath.Join(dir, ".lock")
			}
			target := filepath.Join(t.TempDir(), "target")
			// The target holds what the name held (so a log read through
			// the link still verifies), or a marker.
			orig, err := os.ReadFile(name)
			if err != nil {
				orig = []byte("the owner's file\n")
			}
			if err := os.WriteFile(target, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if err := os.Symlink(target, name); err != nil {
				t.Fatal(err)
			}
			dangling := filepath.Join(t.TempDir(), "dangling")
			if at == "lock" {
				// A dangling link: opening through it would make its target.
				if err := os.Remove(name); err != nil || os.Symlink(dangling, name) != nil {
					t.Fatal(err)
				}
			}
			w, _, err = Open(dir, Options{HeadFile: head, Now: c.Now})
			if err == nil {
				_, err = w.Append(decision("chat-1", 2, wire.OutcomeAllowed{}))
				w.Close()
			}
			if got, _ := os.ReadFile(target); string(got) != string(orig) {
				t.Fatalf("the link's target was written (Open/Append: %v): %q, was %q", err, got, orig)
			}
			if _, serr := os.Lstat(dangling); serr == nil {
				t.Fatalf("a file was made through the link (Open/Append: %v)", err)
			}
			// (A link at the day's log file is not listed as the log, so
			// the head names records the log does not hold: refused.)
			if err == nil && at != "head temporary" {
				t.Fatal("the writer went on through a link at " + at)
			}
		})
	}
}
