package session

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/wire"
)

// plantKinds are what a side file's name may hold that loopd never made.
var plantKinds = []struct {
	name string
	make func(t *testing.T, at string)
}{
	{"dangling link", func(t *testing.T, at string) { mustSymlink(t, filepath.Join(t.TempDir(), "gone"), at) }},
	{"link to a file", func(t *testing.T, at string) {
		other := filepath.Join(t.TempDir(), "other")
		if err := os.WriteFile(other, []byte("records 1 bytes 1 sha256 "+strings.Repeat("0", 64)+" prompt 1 context 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, other, at)
	}},
	{"link to /dev/null", func(t *testing.T, at string) { mustSymlink(t, os.DevNull, at) }},
	{"directory", func(t *testing.T, at string) {
		if err := os.Mkdir(at, 0o700); err != nil {
			t.Fatal(err)
		}
	}},
	{"fifo", func(t *testing.T, at string) {
		if err := syscall.Mkfifo(at, 0o600); err != nil {
			t.Fatal(err)
		}
	}},
}

func mustSymlink(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}

// within runs f, failing the test if it does not return in 5 seconds (a
// FIFO read blocks until a writer comes).
func within[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("it did not return: a FIFO stalled it")
		panic("unreachable")
	}
}

// TestSideFileRefusesTheSession: what the session does when an epoch's
// .sent or .torn side file is not the regular file loopd wrote (issue 29,
// class 1). The session is refused, the turn says which file and why with
// the runbook line, nothing is answered from a session rebuilt without it,
// and the log is left exactly as it was: an unreadable side file is not an
// empty one.
func TestSideFileRefusesTheSession(t *testing.T) {
	for _, side := range []struct {
		name string
		path func(string) string
	}{{".sent", sessionlog.SentPath}, {".torn", sessionlog.TornPath}} {
		for _, k := range plantKinds {
			t.Run(side.name+"/"+k.name, func(t *testing.T) {
				e := newEnv(t, fakellama.Options{Script: fakellama.Queue(text("Hello."), text("Again."))}, nil)
				id := sessionOf(t, e.say(nil, "hi"))
				e.mgr.Close()
				log := sessionlog.Path(e.home, id, 0)
				at := side.path(log)
				if err := os.Remove(at); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				k.make(t, at)
				before, err := os.ReadFile(log)
				if err != nil {
					t.Fatal(err)
				}
				e.restart()
				evs := within(t, func() []wire.TurnEvent { return e.say(&id, "hello again") })
				f, ok := evs[len(evs)-1].(wire.TurnFailed)
				if !ok || !strings.Contains(f.Message, at) || !strings.Contains(f.Message, "see docs/runbook.md#session-log-damaged") {
					t.Fatalf("with a %s at %s the turn ended %#v; want a refusal naming it", k.name, at, evs[len(evs)-1])
				}
				if after, _ := os.ReadFile(log); string(after) != string(before) {
					t.Fatalf("the log changed:\n%s\nwas\n%s", after, before)
				}
			})
		}
	}
}

// TestCoreFileKinds: memory/core.md is the owner's file, and the owner may
// link it on purpose, so a link to a regular file is read. Anything else
// at the name is refused, naming the path, within a bounded time: a
// dangling link is not an empty core, a FIFO does not stall the session's
// start, and a device (here /dev/null, which reads as empty) is not read.
func TestCoreFileKinds(t *testing.T) {
	for _, k := range plantKinds {
		t.Run(k.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.Mkdir(filepath.Join(home, "memory"), 0o700); err != nil {
				t.Fatal(err)
			}
			at := CorePath(home)
			k.make(t, at)
			type result struct {
				core string
				err  error
			}
			r := within(t, func() result { c, err := ReadCore(home); return result{c, err} })
			if k.name == "link to a file" {
				if r.err != nil || !strings.HasPrefix(r.core, "records 1") {
					t.Fatalf("a link to the owner's file: %q, %v; want it read", r.core, r.err)
				}
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), at) || !strings.HasSuffix(r.err.Error(), "see docs/runbook.md#core-memory-unreadable") {
				t.Fatalf("with a %s at %s: core %q, err %v; want a refusal naming it", k.name, at, r.core, r.err)
			}
		})
	}
}

// TestSessionDirKinds: the O_NOFOLLOW opens of a session's files guard
// only the last name, so the session's own directory, which loopd makes
// with mkdir, must not be a link either (issue 29, class 1): a link there
// (here to the session's real directory, moved aside) would have every
// read and append go through it, a dangling one would read as "no such
// session". Each is refused, naming the
// directory with the runbook line, and nothing is written through it.
func TestSessionDirKinds(t *testing.T) {
	regular := func(t *testing.T, at string) {
		if err := os.WriteFile(at, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kinds := []struct {
		name string
		make func(t *testing.T, at string) // nil: a link to the moved directory
	}{{"link to the session's directory", nil}, plantKinds[0], plantKinds[4], {"regular file", regular}}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			e := newEnv(t, fakellama.Options{Script: fakellama.Queue(text("Hello."), text("Again."))}, nil)
			id := sessionOf(t, e.say(nil, "hi"))
			e.mgr.Close()
			dir := sessionlog.Dir(e.home, id)
			moved := filepath.Join(filepath.Dir(e.home), "moved")
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if k.make == nil {
				mustSymlink(t, moved, dir)
			} else {
				k.make(t, dir)
			}
			log := filepath.Join(moved, "0.jsonl")
			before, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			e.restart()
			evs := within(t, func() []wire.TurnEvent { return e.say(&id, "hello again") })
			f, ok := evs[len(evs)-1].(wire.TurnFailed)
			if !ok || !strings.Contains(f.Message, dir) || !strings.Contains(f.Message, "see docs/runbook.md#session-log-damaged") {
				t.Fatalf("with a %s at %s the turn ended %#v; want a refusal naming it", k.name, dir, evs[len(evs)-1])
			}
			if after, _ := os.ReadFile(log); string(after) != string(before) {
				t.Fatalf("the log was written through the link:\n%s\nwas\n%s", after, before)
			}
		})
	}
}
