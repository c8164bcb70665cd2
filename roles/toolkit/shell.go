package toolkit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// waitDelay is how long shell waits, after the command's shell has exited,
// for anything it left running in the background to close the output.
// Then the toolkit answers and exits; the container ends with it and the
// kernel kills whatever is left in its PID namespace.
const waitDelay = 200 * time.Millisecond

// shellEnv is the whole environment a command gets: nothing of brokerd's.
// A command given a secret file also gets wire.ToolkitSecretEnv, its path.
var shellEnv = []string{"PATH=/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}

// shell runs command under /bin/sh in cwd (or /), with stdout and stderr
// captured together, in the order written. The answer is a result whatever
// the command's exit status, which is the note after the text when it is
// not 0: the
// command ran, and its failure is information for the model. A wall-time
// limit is brokerd's: it stops the container.
func shell(command string, cwd *string, env []string, max int64) Response {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = "/"
	if cwd != nil {
		cmd.Dir = *cwd
	}
	cmd.Env = env
	out := &capture{max: max}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	var status string
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		status = exitStatus(exitErr.ProcessState)
	case errors.Is(err, exec.ErrWaitDelay):
		// The shell exited but left something holding the output: what was
		// captured is still the command's output.
		status = exitStatus(cmd.ProcessState) + " (it left a process running, which ends with the container)"
	default:
		if cwd != nil {
			if _, serr := os.Stat(*cwd); serr != nil {
				return failed(fmt.Sprintf("cannot run in %s: %s", *cwd, reason(serr)))
			}
		}
		return failed("cannot run /bin/sh: " + err.Error())
	}
	text, note := out.text("output")
	switch {
	case status != "" && status != "exit status 0":
		note = joinNotes(note, "["+status+"]")
	case text == "" && note == "":
		note = "(no output)"
	}
	// brokerd puts the notes on a line of their own after the text, once
	// it has cut the text to its cap.
	return Response{Status: "result", Text: text, Tail: note}
}

// exitStatus says how the shell ended: "exit status N" or "killed by
// signal N (name)".
func exitStatus(ps *os.ProcessState) string {
	if ps == nil {
		return "exit status unknown"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}
