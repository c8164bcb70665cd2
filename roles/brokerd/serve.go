package brokerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"boxmaker/audit"
	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/roles/brokerd/internal/serve"
	"boxmaker/runbook"
)

type serveCmd struct {
	Config      string `required:"" placeholder:"PATH" help:"brokerd.toml to read."`
	AcceptBreak bool   `help:"Accept the audit chain's first failure, or a log that does not hold its head, once, by appending a record that names it (see docs/runbook.md#audit-chain-broken, #audit-head-mismatch)."`
}

// Run reads the config, runs the audit startup check, then serves both
// sockets until SIGINT or SIGTERM. Exit statuses: 1 for a config that does
// not load, brokerd already running, a broken chain, a log that does not
// hold its head, or an audit log that cannot be written; 2 for
// --accept-break with nothing to accept.
func (c *serveCmd) Run(e *env) error {
	// brokerd holds the secrets' values and its egress CA's keys: nothing
	// else may read its memory, not even another process of its own user
	// (non-dumpable, its /proc/<pid>/{environ,mem,fd,maps} are root's and
	// ptrace is refused; issue 29).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(e.stderr, "%s serve: cannot make itself non-dumpable (PR_SET_DUMPABLE 0: %v), so another process of its user could read its secrets; %s\n",
			e.name, err, runbook.See("role-dumpable"))
		return exitCode(1)
	}
	cfg, err := config.Load(c.Config, os.Getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s serve: %v\n", e.name, err)
		return exitCode(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rt runner.Runtime
	defer func() {
		if cl, ok := rt.(io.Closer); ok {
			cl.Close()
		}
	}()
	open := func() (runner.Runtime, error) {
		var err error
		rt, err = newRuntime(ctx, cfg, e.stderr)
		return rt, err
	}
	err = serve.Run(ctx, serve.Options{Config: cfg, AcceptBreak: c.AcceptBreak, OpenRuntime: open, Stderr: e.stderr})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, audit.ErrNothingToAccept):
		fmt.Fprintln(e.stderr, err) // its text ends with the runbook line
		return exitCode(2)
	case errors.Is(err, audit.ErrAlreadyRunning), errors.Is(err, audit.ErrChainBroken), errors.Is(err, audit.ErrHeadMismatch),
		errors.Is(err, audit.ErrUnavailable):
		fmt.Fprintln(e.stderr, err)
		return exitCode(1)
	}
	fmt.Fprintf(e.stderr, "%s serve: %v\n", e.name, err)
	return exitCode(1)
}
