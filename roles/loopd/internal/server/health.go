package server

import (
	"context"
	"fmt"
	"net"
	"time"

	"boxmaker/roles/loopd/internal/config"
	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/session"
	"boxmaker/roles/loopd/internal/specials"
	"boxmaker/wire"
)

// healthTimeout bounds each check that asks another process.
const healthTimeout = 5 * time.Second

// health is loopd's answer to bxctl doctor (issue 27): what it learnt of the
// model at start, and whether the model, its core memory and brokerd answer
// now.
type health struct {
	cfg    config.Config
	client *llama.Client
	nctx   int
	slots  int
	vocab  *specials.Vocabulary
}

func (h *health) report(ctx context.Context) wire.HealthReport {
	var out wire.HealthReport
	add := func(name string, err error, ok, anchor string) {
		c := wire.HealthCheck{Name: name, OK: err == nil, Detail: ok}
		if err != nil {
			c.Detail, c.Runbook = err.Error(), anchor
		}
		out.Checks = append(out.Checks, c)
	}
	cctx, cancel := context.WithTimeout(ctx, healthTimeout)
	err := h.client.Health(cctx)
	cancel()
	if err != nil {
		err = fmt.Errorf("the model does not answer /health through %s: %v", h.cfg.Model.Socket, err)
	}
	add("model", err, fmt.Sprintf("answers through %s; learnt at start: n_ctx %d, server slots %d", h.cfg.Model.Socket, h.nctx, h.slots),
		"model-server-unreachable")
	add("special tokens", nil, fmt.Sprintf("model %s: %d control and %d user-defined tokens are neutralised in untrusted text (%d markers with the fixed floor)",
		h.vocab.Model, len(h.vocab.Control), len(h.vocab.UserDefined), h.vocab.Set.Len()), "")
	_, err = session.ReadCore(h.cfg.Paths.Home)
	add("core memory", err, "readable", "core-memory-unreadable")
	if h.cfg.Broker.Socket != "" {
		// A connection loopd closes without a request is one brokerd
		// drops without a word (it is loopd's peer).
		c, err := net.DialTimeout("unix", h.cfg.Broker.Socket, healthTimeout)
		if err == nil {
			c.Close()
		} else {
			err = fmt.Errorf("brokerd's %s does not answer: %v", h.cfg.Broker.Socket, err)
		}
		add("brokerd", err, fmt.Sprintf("%s accepts loopd's connection", h.cfg.Broker.Socket), "broker-unavailable")
	}
	return out
}
