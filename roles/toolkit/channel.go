package toolkit

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// protectChannel makes the toolkit's answer channel (its stdout, which
// brokerd reads through Podman's attach) one that the tool's own processes
// cannot write. The toolkit is PID 1 of the container, and the commands it
// runs have its uid and no capabilities (all dropped, no new privileges).
// A process of the same uid reaches another's descriptors only through
// /proc/PID/fd, /proc/PID/task/TID/fd, /proc/PID/mem, ptrace,
// process_vm_writev and pidfd_getfd, and the kernel checks every one of
// them with ptrace_may_access: a process that is not dumpable passes that
// check only for a caller with CAP_SYS_PTRACE over its user namespace,
// which no process in the container has. Its /proc entries also turn
// owned by root (mode 0500 for fd/), so not even the directory can be
// listed. Being dumpable is per process, so every thread of the Go
// runtime is covered, and it is reset to dumpable by execve, so the
// commands' own /bin/sh is unaffected.
//
// The commands never inherit the channel either: they get /dev/null on
// stdin and the capture pipe on stdout and stderr, and every other
// descriptor of the toolkit is close-on-exec (os/exec). See
// docs/decisions.md, "The toolkit's answer channel".
func protectChannel() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot make itself non-dumpable, so a command could write its answer: %w", err)
	}
	// Trust but verify: an answer must never go out on an open channel.
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
		return errors.Join(errors.New("it is still dumpable after PR_SET_DUMPABLE 0, so a command could write its answer"), err)
	}
	return nil
}
