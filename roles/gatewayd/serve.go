package gatewayd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/roles/gatewayd/internal/bridge"
	"boxmaker/roles/gatewayd/internal/config"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/runbook"
	"boxmaker/unixsock"
)

// startTimeout bounds each Mattermost call made at startup.
const startTimeout = 15 * time.Second

// Run reads the config, then serves until SIGINT or SIGTERM.
func (c *serveCmd) Run(e *env) error {
	// gatewayd holds the Mattermost bot's token: nothing else may read its
	// memory, not even another process of its own user (non-dumpable, its
	// /proc/<pid>/{environ,mem,fd,maps} are root's and ptrace is refused;
	// issue 29).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot make itself non-dumpable (PR_SET_DUMPABLE 0: %v), so another process of its user could read its token; %s",
			err, runbook.See("role-dumpable"))
	}
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
	// If gateway.sock stops serving, everything stops: a gatewayd without
	// it must not go on reading Mattermost as if it served.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	b := bridge.New(bridge.Options{MM: client, Bot: bot, Owners: owners, State: st,
		LoopSocket: cfg.Sockets.Loop, Log: logf})
	if err := b.Start(ctx); err != nil {
		return fmt.Errorf("%v; %s", err, runbook.See("gatewayd-state-damaged"))
	}
	b.LoadApprovals()
	// gateway.sock: 0600 in a directory of its own, 0660 in the deployed
	// broker-gateway directory; only [peers] gateway's client gets in. It
	// is made once the channel cursors exist (Start): what is posted after
	// the socket appears is never taken for history from before gatewayd
	// started (the end-to-end tests post as soon as it is there, and
	// missed a message under load).
	ln, err := unixsock.Listen(cfg.Sockets.Gateway, cfg.Peers.Gateway, func(line string) { logf("gatewayd: " + line) })
	if err != nil {
		return fmt.Errorf("gateway.sock: %w; %s", err, runbook.See("socket-unavailable"))
	}
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
	ln.Close() // ServeGateway closed it; this removes the socket if it is still ours
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
