package loopd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"boxmaker/roles/loopd/internal/brokerport"
	"boxmaker/roles/loopd/internal/config"
	"boxmaker/roles/loopd/internal/server"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// brokerWait bounds the wait for brokerd's first answer to a tool call: the
// tool's own run (brokerd's container timeout is far shorter) or the
// pending frame of an ask. After a pending frame, BrokerPort waits until the
// approval's expiry plus 30 s instead.
const brokerWait = 10 * time.Minute

// Run reads the config, then serves until SIGINT or SIGTERM.
func (c *serveCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Serve(ctx, c.Config, e.stderr)
	var st *server.SelftestError
	if errors.As(err, &st) {
		for _, p := range st.Problems {
			fmt.Fprintf(e.stderr, "%s: self-test: %s\n", e.name, p)
		}
		fmt.Fprintf(e.stderr, "%s: self-test failed; %s\n", e.name, runbook.See("loopd-selftest-failed"))
		return exitCode(1)
	}
	var ce *wire.ConfigError
	if errors.As(err, &ce) {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		if ce.Problem != config.RetiredSlot { // which names its own entry
			fmt.Fprintln(e.stderr, runbook.See("loopd-config-invalid"))
		}
		return exitCode(1)
	}
	return err
}

// Serve is `loopd serve` without the signal handling: it reads the config
// at path and serves until ctx ends. Main is the entry point; Serve lets a
// test run loopd in the test's own process (M3a §12's end-to-end test).
func Serve(ctx context.Context, path string, stderr io.Writer) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	var port tools.ToolPort
	if cfg.Broker.Socket != "" {
		port = brokerport.New(cfg.Broker.Socket, brokerWait, stderr)
	}
	return server.Run(ctx, server.Options{Config: cfg, Port: port, Stderr: stderr})
}
