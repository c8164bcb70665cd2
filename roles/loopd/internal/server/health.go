package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"boxmaker/roles/loopd/internal/config"
	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/session"
	"boxmaker/roles/loopd/internal/specials"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// healthTimeout bounds each check that asks another process.
const healthTimeout = 5 * time.Second

// health is loopd's answer to bxctl doctor (issue 27): what it learnt of the
// model at start, and whether the model, its core memory and brokerd answer
// now.
type health struct {
	// busy lets one report run at a time: each asks the model and dials
	// brokerd, and a flood of requests must not multiply that.
	busy   sync.Mutex
	cfg    config.Config
	client *llama.Client
	nctx   int
	slots  int
	vocab  *specials.Vocabulary
}

func (h *health) report(ctx context.Context) wire.HealthReport {
	var out wire.HealthReport
	if !h.busy.TryLock() {
		return wire.HealthReport{Checks: []wire.HealthCheck{{Name: "report", OK: false,
			Detail: "another health request is being answered; ask again in a few seconds", Runbook: runbook.See("loop-unavailable")}}}
	}
	defer h.busy.Unlock()
	add := func(name string, err error, ok, see string) {
		c := wire.HealthCheck{Name: name, OK: err == nil, Detail: ok}
		if err != nil {
			// The role's own errors may end with their runbook line
			// already; it is said once, in Runbook.
			c.Detail, c.Runbook = strings.TrimSuffix(strings.TrimSuffix(err.Error(), see), "; "), see
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
		runbook.See("model-server-unreachable"))
	add("special tokens", nil, fmt.Sprintf("model %s: %d control and %d user-defined tokens are neutralised in untrusted text (%d markers with the fixed floor)",
		h.vocab.Model, len(h.vocab.Control), len(h.vocab.UserDefined), h.vocab.Set.Len()), "")
	_, err = session.ReadCore(h.cfg.Paths.Home)
	add("core memory", err, "readable", runbook.See("core-memory-unreadable"))
	if h.cfg.Broker.Socket != "" {
		// A connection loopd closes without a request is one brokerd
		// drops without a word (it is loopd's peer).
		c, err := net.DialTimeout("unix", h.cfg.Broker.Socket, healthTimeout)
		if err == nil {
			c.Close()
		} else {
			err = fmt.Errorf("brokerd's %s does not answer: %v", h.cfg.Broker.Socket, err)
		}
		add("brokerd", err, fmt.Sprintf("%s accepts loopd's connection", h.cfg.Broker.Socket), runbook.See("broker-unavailable"))
	}
	return out
}
