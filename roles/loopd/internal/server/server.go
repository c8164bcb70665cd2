// Package server is loopd serve: the self-test, then the session manager
// behind loop.sock until the context ends.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/loopd/internal/channel"
	"boxmaker/roles/loopd/internal/config"
	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/session"
	"boxmaker/roles/loopd/internal/specials"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/runbook"
	"boxmaker/unixsock"
)

// Options are what Run needs besides the context.
type Options struct {
	Config config.Config
	// Port runs non-core tool calls; nil means none is configured, and
	// every such call fails with tools.NoBroker. The chat issue builds
	// the BrokerPort from Config.Broker.Socket and passes it here.
	Port tools.ToolPort
	// Stderr gets the self-test's findings and the owner's notices.
	Stderr io.Writer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Ready, when set, is called once loop.sock is listening.
	Ready func()
}

// SelftestError is a failed self-test: loopd does not serve.
type SelftestError struct{ Problems []string }

func (e *SelftestError) Error() string {
	return "self-test failed: " + strings.Join(e.Problems, "; ") + "; " + runbook.See("loopd-selftest-failed")
}

// Run checks that loopd can work, then serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	cfg := o.Config
	var mu sync.Mutex
	say := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(o.Stderr, "loopd: %s\n", msg)
	}
	client := llama.New(cfg.Model.Socket, cfg.Model.ReplyTimeout(), cfg.Model.IdleTimeout())
	defer client.Close()
	nctx, vocab, err := selftest(ctx, cfg, client)
	if err != nil {
		return err
	}
	say(vocab.Summary())
	nslots, err := serverSlots(ctx, client, say)
	if err != nil {
		return err
	}
	lns, err := listen(cfg, say)
	if err != nil {
		return err
	}
	mgr := session.New(session.Config{
		Home:         cfg.Paths.Home,
		SystemPrompt: cfg.Model.SystemPrompt,
		Slots:        nslots,
		MaxSteps:     cfg.Model.MaxSteps,
		NCtx:         nctx,
		EpochPercent: cfg.Model.EpochPercent,
		Model:        client,
		Neutral:      vocab.Set,
		Check: func(ctx context.Context, texts []string) error {
			return vocab.Check(ctx, client, texts)
		},
		Tools:  &tools.Runner{Port: o.Port, Now: o.Now},
		Now:    o.Now,
		Report: say,

		// The answer limit, and the server's own count for what may not
		// fit the context (session: fit.go).
		MaxAnswerTokens: cfg.Model.MaxAnswerTokens,
		Tokens: func(ctx context.Context, text string) (int, error) {
			ids, err := client.TokenizeEach(ctx, []string{text}, true)
			if err != nil {
				return 0, err
			}
			return len(ids[0]), nil
		},
	})
	say(fmt.Sprintf("serving %s (model context %d tokens, server slots %d)", strings.Join(cfg.Listen.Sockets(), " and "), nctx, nslots))
	if o.Ready != nil {
		o.Ready()
	}
	// Only the owner's socket answers bxctl doctor's health request:
	// gatewayd, the role that faces the internet, need not learn the model
	// or drive its /health and brokerd's socket.
	hc := &health{cfg: cfg, client: client, nctx: nctx, slots: nslots, vocab: vocab}
	srvs := []*channel.Server{{Say: mgr.Say, Health: hc.report, Log: say}}
	if cfg.Listen.Gateway != "" {
		srvs = append(srvs, &channel.Server{Say: mgr.Say, Log: say})
	}
	if cfg.Listen.Jobs != "" {
		// brokerd's jobs socket only starts sessions (Manager.SayNew).
		srvs = append(srvs, &channel.Server{Say: mgr.SayNew, Log: say})
	}
	err = serve(ctx, srvs, lns)
	return errors.Join(err, mgr.Close())
}

// listen makes every socket loopd serves the channel protocol on (the
// owner's, and gatewayd's when configured) with unixsock.Listen: 0600 in
// a directory of its own, 0660 in a deployed pair directory, and only the
// client its [peers] rule names let through (refusals go to log). If one
// fails, those already made are closed, which removes them.
func listen(cfg config.Config, log func(string)) ([]net.Listener, error) {
	type sock struct {
		path string
		peer *unixsock.Rule
	}
	socks := []sock{{cfg.Listen.Socket, cfg.Peers.Socket}}
	if cfg.Listen.Gateway != "" {
		socks = append(socks, sock{cfg.Listen.Gateway, cfg.Peers.Gateway})
	}
	if cfg.Listen.Jobs != "" {
		socks = append(socks, sock{cfg.Listen.Jobs, cfg.Peers.Jobs})
	}
	var lns []net.Listener
	for _, s := range socks {
		ln, err := unixsock.Listen(s.path, s.peer, log)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("loop.sock: %w; %s", err, runbook.See("socket-unavailable"))
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// serve serves srvs[i] on lns[i], each on a goroutine it owns, until
// ctx ends or one of them fails; then it stops the others (each closes
// its listener, removing its socket, and waits for its connections) and
// returns when all have. The listeners share one session manager, so a
// session is the same, and as busy, whichever socket a say came in on.
func serve(ctx context.Context, srvs []*channel.Server, lns []net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(lns))
	var wg sync.WaitGroup
	for i, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = srvs[i].Serve(ctx, ln)
			// A listener that failed stops loopd, as it did with one socket.
			cancel()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// selftest checks, before serving, everything a turn will need: core
// memory, the model through infer.sock, the context size, the model's
// special tokens, and the sessions directory. It reports every problem it
// finds, not just the first. Without the model's special tokens loopd does
// not serve: it would have only the fixed floor to neutralise with.
func selftest(ctx context.Context, cfg config.Config, client *llama.Client) (int, *specials.Vocabulary, error) {
	var vocab *specials.Vocabulary
	var problems []string
	if _, err := session.ReadCore(cfg.Paths.Home); err != nil {
		problems = append(problems, err.Error())
	}
	if err := os.MkdirAll(filepath.Join(cfg.Paths.Home, "sessions"), 0o700); err != nil {
		problems = append(problems, fmt.Sprintf("cannot make the sessions directory: %v", err))
	}
	nctx := cfg.Model.NCtx
	if err := client.Health(ctx); err != nil {
		problems = append(problems, fmt.Sprintf("the model does not answer /health through %s: %v", cfg.Model.Socket, err))
	} else {
		if nctx == 0 {
			if nctx, err = client.NCtx(ctx); err != nil {
				problems = append(problems, fmt.Sprintf("cannot learn the context size (set [model] n_ctx): %v", err))
			}
		}
		if vocab, err = specials.Derive(ctx, client); err != nil {
			problems = append(problems, fmt.Sprintf("cannot learn the served model's special tokens through %s, so untrusted text could not be neutralised: %v; %s",
				cfg.Model.Socket, err, runbook.See("loopd-special-tokens")))
		}
	}
	if len(problems) > 0 {
		return 0, nil, &SelftestError{Problems: problems}
	}
	return nctx, vocab, nil
}

// serverSlots is how many slots the model server has, for the sessions to
// share. A server whose /props does not say is used as one slot, and the
// owner is told; a /props that cannot be read fails like the self-test.
func serverSlots(ctx context.Context, client *llama.Client, say func(string)) (int, error) {
	n, ok, err := client.TotalSlots(ctx)
	if err != nil {
		return 0, &SelftestError{Problems: []string{fmt.Sprintf("cannot learn the model server's slots: %v", err)}}
	}
	if !ok {
		say("the model server's /props gives no total_slots; every session uses its slot 0, one request at a time")
	}
	return n, nil
}
