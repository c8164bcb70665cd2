// Package brokerport is loopd's ToolPort over brokerd's broker.sock (M3a §8):
// one connection per call, the request frame, then an optional pending frame
// and the final answer. Every way the broker can fail reaches the model as
// the one failed message below, and the turn goes on.
package brokerport

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// Unavailable is what the model reads when the broker cannot be reached or
// closes before its final answer.
const Unavailable = "the tool broker is unavailable"

// pendingSlack is how long past an approval's expiry the port waits before
// giving up: brokerd answers an expired approval itself within a second or
// two, so silence for this long means it is gone (M3a §8: expires + 30 s).
const pendingSlack = 30 * time.Second

// Port sends tool requests to broker.sock.
type Port struct {
	socket string
	// Wait bounds the wait for the first answer frame (a tool run, or the
	// pending frame); after a pending frame the bound is its expiry plus 30 s.
	wait time.Duration
	// slack is pendingSlack; tests shorten it.
	slack time.Duration
	now   func() time.Time
	log   io.Writer
	ids   atomic.Uint64
}

// New returns a port for the broker socket at path. wait bounds the wait
// for the broker's first frame; log receives the runbook pointer each time
// the broker is unavailable.
func New(path string, wait time.Duration, log io.Writer) *Port {
	return &Port{socket: path, wait: wait, slack: pendingSlack, now: time.Now, log: log}
}

// Call implements loopd's ToolPort.
func (p *Port) Call(ctx context.Context, req wire.ToolRequest, onPending func(wire.PendingResponse)) wire.ToolResponse {
	resp, err := p.call(ctx, req, onPending)
	if err != nil {
		fmt.Fprintf(p.log, "loopd: tool call %s/%d: %s: %v\n%s\n", req.Session, req.Call, Unavailable, err, runbook.See("broker-unavailable"))
		return wire.FailedResponse{Message: Unavailable}
	}
	return resp
}

func (p *Port) call(ctx context.Context, req wire.ToolRequest, onPending func(wire.PendingResponse)) (wire.ToolResponse, error) {
	var d net.Dialer
	dialCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := d.DialContext(dialCtx, "unix", p.socket)
	cancel()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// An abandoned turn closes the connection; brokerd then drops a pending
	// approval and writes nothing for it.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	id := p.ids.Add(1)
	if err := conn.SetWriteDeadline(p.now().Add(p.wait)); err != nil {
		return nil, err
	}
	if err := wire.WriteEnvelope(conn, wire.Request(id, req)); err != nil {
		return nil, err
	}
	deadline := p.now().Add(p.wait)
	for {
		if err := conn.SetReadDeadline(deadline); err != nil {
			return nil, err
		}
		env, err := wire.ReadEnvelope(conn)
		if err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		if env.ID != id {
			return nil, fmt.Errorf("an answer for request %d, not %d", env.ID, id)
		}
		switch m := env.Msg.(type) {
		case wire.PendingResponse:
			if env.Final {
				return nil, fmt.Errorf("a final pending frame")
			}
			if onPending != nil {
				onPending(m)
			}
			deadline = m.Expires.Time().Add(p.slack)
		case wire.ToolResponse:
			if !env.Final {
				return nil, fmt.Errorf("a %T that is not final", m)
			}
			return m, nil
		case wire.WireError:
			return nil, fmt.Errorf("brokerd answered %s: %s", m.Code, m.Detail)
		default:
			return nil, fmt.Errorf("an unexpected %s message", env.Msg.Kind())
		}
	}
}
