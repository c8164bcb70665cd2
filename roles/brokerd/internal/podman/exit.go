package podman

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"golang.org/x/sys/unix"

	"boxmaker/runbook"
)

// exitWait bounds the wait, after the answer, for the toolkit to exit on
// its own. It exits as soon as it has written its answer; past this the
// call falls back to removing the container at once, which kills it.
const exitWait = 2 * time.Second

// initPid asks the service for the host pid of the container's init (the
// toolkit: it is PID 1 of the container's own PID namespace). It runs
// while the tool does, so that its round trip costs the call nothing.
// 0 means it is not known.
func initPid(conn context.Context, id string) int {
	data, err := containers.Inspect(conn, id, new(containers.InspectOptions).WithSize(false))
	if err != nil || data.State == nil {
		return 0
	}
	return data.State.Pid
}

// initExited reports whether the container's init, host pid pid, has
// exited within wait. A true answer means nothing the call started can
// still run: the kernel lets the init of a PID namespace finish exiting
// only once every other process in that namespace (and in any namespace
// nested in it) is gone, and a pidfd becomes readable only once its
// process has finished exiting. Every doubt answers false, and the caller
// removes the container at once instead, as before issue 26:
//   - no pid, or a pid that cannot be opened (gone already: it could have
//     been reused by then, so nothing is proven of it);
//   - a process that is not the init of a PID namespace whose pid in our
//     namespace is pid (/proc/<pid>/status NSpid: "<pid> ... 1"), which
//     also refuses a brokerd whose PID namespace is not the service's;
//   - no exit within wait.
//
// The pidfd is opened before the check, so the process checked is the
// one waited on.
func initExited(pid int, wait time.Duration) bool {
	if pid <= 1 {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if !isNamespaceInit(pid) {
		return false
	}
	// Still the same process once the check is read: a signal 0 through
	// the pidfd fails once it has exited, and then the status read may
	// have been of another process that reused the pid.
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n == 1 && fds[0].Revents&unix.POLLIN != 0
	}
}

// isNamespaceInit reports whether /proc/<pid>/status says the process has
// pid pid here and is PID 1 of a namespace below ours. The file is
// readable by anyone.
func isNamespaceInit(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		return len(f) >= 2 && f[0] == strconv.Itoa(pid) && f[len(f)-1] == "1"
	}
	return false
}

// endedAlone reports whether the call's container ended by itself after
// its answer, so that removing it can wait until after the call: its init
// exited (initExited: nothing of the call runs) and then its output
// stream ended (so the answer is checked over everything it wrote, as
// after a removal). false leaves the container to be removed at once.
//
// With userns = "auto" the removal stays in the call: each container holds
// its own part of the service's subordinate ids until it is removed, and a
// range sized for one container at a time would refuse the next call's.
func (r *Runtime) endedAlone(ctx context.Context, pid <-chan int, attached chan error) bool {
	if r.cfg.UserNS == "auto" {
		return false
	}
	var p int
	select {
	case p = <-pid:
	case <-ctx.Done():
		return false
	}
	if !initExited(p, exitWait) {
		return false
	}
	select {
	case err := <-attached:
		attached <- err // for removeNow, should it still run
		return true
	case <-time.After(exitWait):
		return false
	case <-ctx.Done():
		return false
	}
}

// removeLater removes a container whose call is over and of which nothing
// runs (endedAlone), after the call has returned. Close waits for it. A
// failure is logged, and brokerd's next start removes the leftover; the
// result has gone out by then, and need not be withheld: what withholding
// guarded against, a process of the call still running, is ruled out.
func (r *Runtime) removeLater(conn context.Context, id string) {
	r.removingMu.Lock()
	r.removing.Add(1)
	r.removingMu.Unlock()
	go func() {
		defer r.removing.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(conn), removeTimeout)
		defer cancel()
		if err := remove(ctx, id); err != nil {
			fmt.Fprintf(r.log, "podman: removing tool container %s after its call: %v; %s\n", short(id), err, runbook.See("tool-container-not-removed"))
		}
	}()
}
