package inferproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"boxmaker/runbook"
	"boxmaker/unixsock"
)

// shutdownGrace is how long a stop waits for requests in flight (a reply
// still streaming) before cutting them; cut requests are cancelled at the
// model server too.
const shutdownGrace = 5 * time.Second

type serveCmd struct {
	Config string `required:"" placeholder:"PATH" help:"inferproxy's configuration file to read."`
}

// Run serves until SIGTERM or SIGINT.
func (c *serveCmd) Run(e *env) error {
	cfg, err := LoadConfig(c.Config)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n%s\n", e.name, err, runbook.See("inferproxy-config-invalid"))
		return exitCode(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Serve(ctx, cfg, e.stderr); err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return exitCode(1)
	}
	return nil
}

// Serve listens on cfg's socket and forwards to cfg's model server until
// ctx ends, then stops: it stops accepting, gives requests in flight
// shutdownGrace to finish, cuts the rest, and returns once every handler
// has returned. It logs to logw.
func Serve(ctx context.Context, cfg *Config, logw io.Writer) error {
	return serve(ctx, cfg, logw, shutdownGrace, nil)
}

// serve is Serve with the grace period and, for tests, a channel told when
// the socket is listening.
func serve(ctx context.Context, cfg *Config, logw io.Writer, grace time.Duration, ready chan<- struct{}) error {
	logger := log.New(logw, "inferproxy: ", 0)
	ln, err := listen(cfg, logger)
	if err != nil {
		return err
	}
	defer ln.Close() // after Shutdown has closed it, this only makes sure

	p := newProxy(cfg, logger)
	defer p.tr.CloseIdleConnections()
	srv := &http.Server{
		Handler: p,
		// No ReadTimeout or WriteTimeout: a reply streams for as long as
		// the model writes. ReadTimeout would also cancel a long stream's
		// context once it passed.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          logger,
		// "OPTIONS *" is refused like every other request, not answered by
		// net/http itself.
		DisableGeneralOptionsHandler: true,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Printf("listening on %s, forwarding to %s", cfg.Listen.Socket, cfg.Upstream.URL)
	if ready != nil {
		close(ready)
	}

	select {
	case err := <-errc:
		<-p.close()
		return fmt.Errorf("serving %s: %w", cfg.Listen.Socket, err)
	case <-ctx.Done():
	}
	logger.Printf("stopping")
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Requests still in flight: close their connections, which
		// cancels their requests to the model server.
		logger.Printf("cutting requests still in flight after %v", grace)
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		logger.Printf("serve: %v", err)
	}
	<-p.close()
	return nil
}

// listen makes infer.sock (unixsock.Listen: 0600 in a directory of its own,
// 0660 in a deployed pair directory) and lets through only the client
// [peers] socket names; a refused one is logged.
func listen(cfg *Config, logger *log.Logger) (*unixsock.Listener, error) {
	ln, err := unixsock.Listen(cfg.Listen.Socket, cfg.Peers.Socket, func(line string) { logger.Print(line) })
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, runbook.See("inferproxy-socket-unavailable"))
	}
	return ln, nil
}
