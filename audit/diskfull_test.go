package audit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/wire"
)

// TestWriterDiskFull fills a real (tiny) filesystem: the Append that does not
// fit fails with ErrUnavailable, every later one too, and the log still
// verifies; once there is room again, startup recovers the torn line. It
// needs root to mount a tmpfs, and fails rather than skips if root cannot.
func TestWriterDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		// CI runs as root: there, not being root is a broken setup.
		if os.Getenv("CI") != "" {
			t.Fatal("mounting a tmpfs needs root, and CI must run this test")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt)
	t.Cleanup(func() { run("umount", mnt) })

	dir, c := filepath.Join(mnt, "audit"), newClock(day0)
	w, _ := openT(t, dir, c, Options{})
	big := decision("chat-1", 1, wire.OutcomeAllowed{})
	big.Arguments = strings.Repeat("x", 3000)
	var err error
	n := 0
	for ; n < 1000 && err == nil; n++ {
		_, err = w.Append(big)
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("after %d records: %v", n, err)
	}
	if _, err := w.Append(someEvent); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Append after the disk filled: %v", err)
	}
	closeT(t, w)
	rep, err := VerifyDir(dir)
	if err != nil || rep.Failure != nil || rep.Records != uint64(n-1) {
		t.Fatalf("%d records written; verify: %v %+v", n-1, err, rep)
	}
	run("mount", "-o", "remount,size=1m", mnt)
	w, srep := openT(t, dir, c, Options{})
	if (rep.TornTail == nil) != (srep.Recovered == nil) {
		t.Fatalf("torn tail %v, recovered %v", rep.TornTail, srep.Recovered)
	}
	t.Logf("%d records fitted; torn tail %v", n-1, rep.TornTail)
	appendT(t, w, someEvent)
	closeT(t, w)
	verifyOK(t, dir)
}
