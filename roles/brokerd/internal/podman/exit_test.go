package podman

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestInitExited: the exit proof answers true only for the init of a PID
// namespace that exits; every doubt is false.
func TestInitExited(t *testing.T) {
	if initExited(0, time.Second) || initExited(1, 10*time.Millisecond) {
		t.Error("no pid, or our own namespace's init, proved an exit")
	}
	// A child of this test is not a namespace's init: refused, alive or not.
	cmd := exec.Command("sleep", "0.1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if initExited(cmd.Process.Pid, time.Second) {
		t.Error("a process that is not a namespace's init proved an exit")
	}
	cmd.Wait()
	if initExited(cmd.Process.Pid, time.Second) || initExited(os.Getpid(), 10*time.Millisecond) {
		t.Error("a reaped pid, or a live process, proved an exit")
	}
	// A real namespace init (unshare, as root): true once it has exited,
	// false while it still runs.
	ns := exec.Command("unshare", "--pid", "--fork", "--kill-child", "sleep", "0.4")
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	defer ns.Wait()
	var child int
	for range 100 {
		if child = childOf(ns.Process.Pid); child != 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if child == 0 || !isNamespaceInit(child) {
		t.Fatalf("no namespace init under unshare (pid %d)", child)
	}
	if initExited(child, 50*time.Millisecond) {
		t.Error("a running init proved an exit")
	}
	if !initExited(child, 2*time.Second) {
		t.Error("an init that exited was not seen to")
	}
}

// childOf is the first child of pid, from /proc; 0 if none yet.
func childOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return 0
	}
	n := 0
	for _, c := range data {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
