package gatewayd

// The kong glue below is repeated, nearly word for word, in every role. A
// shared package would be one more import for every role, and the design
// card lists exactly what a role may import (wire, runbook and, for some,
// policy and audit); forty lines per role is the cheaper price.

import (
	"errors"
	"fmt"
	"io"

	"github.com/alecthomas/kong"
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

// exitCode is returned by a command that has already said everything it has
// to say and only needs the process to end with this status.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// exitPanic is what kong's Exit hook panics with (after --help, for one),
// so that parsing can stop without os.Exit: only main.go ends the process.
type exitPanic struct{ code int }

// usageError is the exit status of a command line that does not parse.
const usageError = 2

// runCLI parses args into cli with a parser named e.name and runs the
// selected command's Run method.
func runCLI(cli any, args []string, e *env) (code int) {
	parser, err := kong.New(cli, kong.Name(e.name), kong.Writers(e.stdout, e.stderr),
		kong.Exit(func(code int) { panic(exitPanic{code}) }))
	if err != nil {
		// A malformed command struct: a bug here, not the user's mistake.
		fmt.Fprintf(e.stderr, "%s: internal error: %v\n", e.name, err)
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
		fmt.Fprintf(e.stderr, "%s: %v\nrun \"%s --help\" for usage\n", e.name, err, e.name)
		return usageError
	}
	err = ctx.Run(e)
	var ec exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	}
	fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
	return 1
}
