package loopd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"boxmaker/roles/loopd/internal/config"
	"boxmaker/roles/loopd/internal/server"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/runbook"
)

// Run reads the config, then serves until SIGINT or SIGTERM.
func (c *serveCmd) Run(e *env) error {
	cfg, err := config.Load(c.Config)
	if err != nil {
		return err
	}
	if cfg.Broker.Socket != "" {
		// The BrokerPort arrives with the chat issue; until then say
		// plainly that the key has no effect yet.
		fmt.Fprintf(e.stderr, "%s: [broker] socket is set, but this build has no broker port yet: "+
			"every call_tool fails with %q\n", e.name, tools.NoBroker)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = server.Run(ctx, server.Options{Config: cfg, Stderr: e.stderr})
	var st *server.SelftestError
	if errors.As(err, &st) {
		for _, p := range st.Problems {
			fmt.Fprintf(e.stderr, "%s: self-test: %s\n", e.name, p)
		}
		fmt.Fprintf(e.stderr, "%s: self-test failed; %s\n", e.name, runbook.See("loopd-selftest-failed"))
		return exitCode(1)
	}
	return err
}
