package podman

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInstanceFileKinds: the instance id decides which containers startup
// cleanup removes, so it is read as every state file is (issue 29, class
// 1): not through a link (a link to another brokerd's instance file would
// adopt its scope and remove its running calls; a dangling one would make
// a new id and orphan this brokerd's own), and only as a regular file (a
// FIFO must not stall the start). Each is refused, naming the path, and
// nothing is written at the name.
func TestInstanceFileKinds(t *testing.T) {
	other := t.TempDir()
	theirs, err := instanceScope(other)
	if err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(t *testing.T, path string){
		"link to another brokerd's id": func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(other, instanceFile), path); err != nil {
				t.Fatal(err)
			}
		},
		"dangling link": func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), path); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"directory": func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, instanceFile)
			plant(t, path)
			before, _ := os.Lstat(path)
			type result struct {
				scope string
				err   error
			}
			done := make(chan result, 1)
			go func() { s, err := instanceScope(dir); done <- result{s, err} }()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("instanceScope did not return: a FIFO stalled it")
			}
			if r.err == nil || !strings.Contains(r.err.Error(), path) || r.scope == theirs ||
				!strings.HasSuffix(r.err.Error(), "see docs/runbook.md#podman-instance-unreadable") {
				t.Fatalf("scope %q, err %v; want a refusal naming %s", r.scope, r.err, path)
			}
			if after, err := os.Lstat(path); err != nil || after.Mode() != before.Mode() {
				t.Fatalf("what is at the name changed: %v %v", after, err)
			}
		})
	}
}
