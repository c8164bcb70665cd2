package bxctl

import (
	"io"
	"time"

	"boxmaker/cmdline"
)

// env is what a command's Run method gets: the name it was invoked as (for
// messages), the three streams and the clock. Nothing reads os.Stdin,
// os.Stdout or os.Stderr directly, so tests can drive a whole role in
// process.
type env struct {
	name   string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	now    func() time.Time
	// command runs systemctl with args and returns its stdout, trimmed
	// (bxctl doctor); nil runs the real one. Tests stand in for systemd.
	command func(args ...string) (string, error)
	// euid is the effective uid (bxctl doctor checks more as root); nil
	// asks the kernel.
	euid func() int
	// sysEtc is where grants check --fix reads passwd, group, subuid and
	// subgid ("": /etc); tests give a directory of their own.
	sysEtc string
}

// The kong glue is shared (package cmdline; docs/decisions.md, "The kong glue is
// one package"); these names keep the role's own code short.
type exitCode = cmdline.ExitCode

const usageError = cmdline.UsageError

// runCLI parses args into grammar with a parser named e.name and runs the
// selected command's Run method with e.
func runCLI(grammar any, args []string, e *env) int {
	return cmdline.Run(grammar, args, e.name, e.stdout, e.stderr, e)
}
