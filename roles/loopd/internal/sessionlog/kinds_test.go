package sessionlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOwnFilesAreNotFollowed: a session's log and its .sent and .torn side
// files are loopd's own (issue 29, class 1). At each name, whatever is
// planted there (a dangling link, a link to a file elsewhere, a directory,
// a FIFO), every read and every append refuses, naming the path, within a
// bounded time: a dangling link is not a log that never was, nothing is
// read through a link, nothing is written into the file a link names, and
// a FIFO stalls nothing.
func TestOwnFilesAreNotFollowed(t *testing.T) {
	kinds := []struct {
		name string
		make func(t *testing.T, at, target string)
	}{
		{"dangling link", func(t *testing.T, at, _ string) { symlink(t, filepath.Join(t.TempDir(), "gone"), at) }},
		{"link to a file", func(t *testing.T, at, target string) { symlink(t, target, at) }},
		{"directory", func(t *testing.T, at, _ string) {
			if err := os.Mkdir(at, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", func(t *testing.T, at, _ string) {
			if err := syscall.Mkfifo(at, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	id := sid(t, "chat-1")
	ops := []struct {
		name  string
		at    func(log string) string
		logOK bool // the log itself is written first, valid
		run   func(log string) error
	}{
		{"Read the log", func(l string) string { return l }, false, func(l string) error { _, err := Read(l); return err }},
		{"OpenWriter", func(l string) string { return l }, false, func(l string) error {
			w, err := OpenWriter(l)
			if err == nil {
				err = w.Append(records(id)[0])
				w.Close()
			}
			return err
		}},
		{"Read with a .torn", TornPath, true, func(l string) error { _, err := Read(l); return err }},
		{"Recover", TornPath, true, func(l string) error { return Recover(l, Torn{Line: 4, Bytes: 1}) }},
		{"LastSent", SentPath, true, func(l string) error { _, err := LastSent(l); return err }},
		{"OpenSent", SentPath, true, func(l string) error {
			w, err := OpenSent(l)
			if err == nil {
				err = w.Append(Sent{Records: 1, Slot: -1})
				w.Close()
			}
			return err
		}},
	}
	for _, op := range ops {
		for _, k := range kinds {
			t.Run(op.name+"/"+k.name, func(t *testing.T) {
				log := filepath.Join(t.TempDir(), "s.0.jsonl")
				if op.logOK {
					writeAll(t, log, records(id))
				}
				target := filepath.Join(t.TempDir(), "elsewhere")
				const marker = "the owner's file\n"
				if err := os.WriteFile(target, []byte(marker), 0o600); err != nil {
					t.Fatal(err)
				}
				at := op.at(log)
				k.make(t, at, target)
				done := make(chan error, 1)
				go func() { done <- op.run(log) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("it did not return: a FIFO stalled it")
				}
				if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), at) {
					t.Fatalf("%s with a %s at %s: %v; want a refusal naming it", op.name, k.name, at, err)
				}
				if got, _ := os.ReadFile(target); string(got) != marker {
					t.Fatalf("the link's target was written: %q", got)
				}
			})
		}
	}
}

func symlink(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}
