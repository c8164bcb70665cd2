// Package cmdline is the kong glue every role's command line shares: parse,
// run the chosen command, and turn what happened into an exit status,
// without os.Exit (only main.go ends the process) and without touching the
// process's own streams (tests drive whole roles in process).
//
// It imports nothing of ours, so a role that imports it reaches no other
// role through it (docs/decisions.md, "The kong glue is one package").
package cmdline

import (
	"errors"
	"fmt"
	"io"

	"github.com/alecthomas/kong"
)

// ExitCode is returned by a command that has already said everything it has
// to say and only needs the process to end with this status.
type ExitCode int

func (c ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// UsageError is the exit status for a command line that does not parse.
const UsageError = 2

// exitPanic is what kong's Exit hook panics with (after --help, for one),
// so that parsing can stop without os.Exit.
type exitPanic struct{ code int }

// Run parses args into grammar with a parser called name, and runs the
// selected command's Run method with bindings (the role's environment). It
// returns the exit status: 0, the ExitCode a command returned, UsageError
// for a command line that does not parse, or 1 for any other error, which
// it prints as "name: error".
func Run(grammar any, args []string, name string, stdout, stderr io.Writer, bindings ...any) (code int) {
	parser, err := kong.New(grammar, kong.Name(name), kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitPanic{code}) }))
	if err != nil {
		// A malformed command struct: a bug here, not the user's mistake.
		fmt.Fprintf(stderr, "%s: internal error: %v\n", name, err)
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			p, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			code = p.code
		}
	}()
	ctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nrun \"%s --help\" for usage\n", name, err, name)
		return UsageError
	}
	err = ctx.Run(bindings...)
	var ec ExitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}
