package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"boxmaker/roles/gatewayd/internal/bridge"
	"boxmaker/roles/gatewayd/internal/config"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/runbook"
)

// startTimeout bounds each Mattermost call made at startup.
const startTimeout = 15 * time.Second

// Run reads the config, then serves until SIGINT or SIGTERM.
func (c *serveCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Serve(ctx, c.Config, e.stderr)
}

// Serve is `gatewayd serve` without the signal handling: it reads the
// config at path, signs in to Mattermost, and serves until ctx ends.
func Serve(ctx context.Context, path string, stderr io.Writer) error {
	var logMu sync.Mutex
	logf := func(line string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintln(stderr, line)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	token, err := config.ReadToken(cfg.Mattermost.TokenFile)
	if err != nil {
		return err
	}
	client, err := mm.New(cfg.Mattermost.URL, token.Value())
	if err != nil {
		return fmt.Errorf("%v; %s", err, runbook.See("gatewayd-config-invalid"))
	}
	bot, owners, err := signIn(ctx, client, cfg)
	if err != nil {
		return err
	}
	st, err := state.Open(cfg.StateFile())
	if err != nil {
		return err
	}
	ln, err := listen(cfg.Sockets.Gateway)
	if err != nil {
		return err
	}
	// If gateway.sock stops serving, everything stops: a gatewayd without
	// it must not go on reading Mattermost as if it served.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	b := bridge.New(bridge.Options{MM: client, Bot: bot, Owners: owners, State: st,
		LoopSocket: cfg.Sockets.Loop, Log: logf})
	if err := b.Start(ctx); err != nil {
		ln.Close()
		return fmt.Errorf("%v; %s", err, runbook.See("gatewayd-state-damaged"))
	}
	b.LoadApprovals()
	logf(fmt.Sprintf("gatewayd: signed in to %s as %s; %d owner(s); listening on %s", cfg.Mattermost.URL, bot.Username, len(owners), cfg.Sockets.Gateway))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		client.Listen(ctx, b)
	}()
	err = b.ServeGateway(ctx, ln)
	stop()
	wg.Wait()
	b.Wait()
	os.Remove(cfg.Sockets.Gateway)
	return err
}

// signIn checks the token with GET /api/v4/users/me, and finds each owner
// and the bot's direct channel with them. gatewayd does not start when
// any of it fails: it would serve no one.
func signIn(ctx context.Context, client *mm.Client, cfg config.Config) (mm.User, []bridge.Owner, error) {
	c, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	bot, err := client.Me(c)
	if err != nil {
		return mm.User{}, nil, fmt.Errorf("cannot sign in to Mattermost at %s with the token in %s: %v; %s",
			cfg.Mattermost.URL, cfg.Mattermost.TokenFile, err, runbook.See("gatewayd-signin-failed"))
	}
	var owners []bridge.Owner
	for _, id := range cfg.Mattermost.Owners {
		u, err := client.User(c, id)
		if err != nil {
			return mm.User{}, nil, fmt.Errorf("owner %s: cannot find that Mattermost user: %v; %s", id, err, runbook.See("gatewayd-owner-unknown"))
		}
		if u.IsBot || u.ID == bot.ID {
			return mm.User{}, nil, fmt.Errorf("owner %s is a bot (%s); owners are people; %s", id, u.Username, runbook.See("gatewayd-owner-unknown"))
		}
		ch, err := client.DirectChannel(c, bot.ID, id)
		if err != nil {
			return mm.User{}, nil, fmt.Errorf("owner %s: cannot open the direct channel with %s: %v; %s", id, u.Username, err, runbook.See("gatewayd-owner-unknown"))
		}
		owners = append(owners, bridge.Owner{ID: id, Username: u.Username, Channel: ch.ID})
	}
	return bot, owners, nil
}

// listen makes gateway.sock at path: its directory is created 0700 if
// missing (an existing one keeps its mode: deployment shares it with
// brokerd's group), a stale socket left by a crash is removed, and the
// socket is 0600. A socket another gatewayd still answers on is not.
func listen(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("gateway.sock: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("gateway.sock: %s exists and is not a socket; not removing it", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("gateway.sock: %s is in use: is another gatewayd running?", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("gateway.sock: %s exists and cannot be checked: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("gateway.sock: removing the stale socket: %w", err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("gateway.sock: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("gateway.sock: %w", err)
	}
	return ln, nil
}
