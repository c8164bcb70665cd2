package brokerd

import (
	"io"

	"boxmaker/cmdline"
)

// env is what a command's Run method gets: the name it was invoked as (for
// messages) and the three streams. Nothing reads os.Stdin, os.Stdout or
// os.Stderr directly, so tests can drive a whole role in process.
type env struct {
	name   string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// The kong glue is shared (package cmdline; docs/decisions.md, "The kong glue is
// one package"); the alias keeps the role's own code short.
type exitCode = cmdline.ExitCode

// runCLI parses args into grammar with a parser named e.name and runs the
// selected command's Run method with e.
func runCLI(grammar any, args []string, e *env) int {
	return cmdline.Run(grammar, args, e.name, e.stdout, e.stderr, e)
}
