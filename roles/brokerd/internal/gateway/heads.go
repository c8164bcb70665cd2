package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// endTries is how many times approval_ended is tried: it only updates a
// post, so a gatewayd down for longer just leaves the post as it was.
const endTries = 3

// sendStart sends broker_start until gatewayd takes it, with the head as it
// is at each try.
func (c *Client) sendStart(ctx context.Context) {
	b := c.newBackoff()
	for {
		h, ok := c.o.Head()
		msg := wire.BrokerStart{Broker: c.broker}
		if ok {
			msg.Head = &h
		}
		e := c.epoch()
		err := c.roundTrip(ctx, msg)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			c.reached(e)
			c.mu.Lock()
			c.started = true
			c.mu.Unlock()
			if ok {
				c.tookHead(h)
			}
			return
		}
		c.problem(err)
		if !b.wait(ctx) {
			return
		}
	}
}

// sendHeads sends the head every HeadEvery when records were written since
// the last head gatewayd took (with broker_start, an approval, or here). A
// try that fails waits for the next tick: the next head says as much.
func (c *Client) sendHeads(ctx context.Context) {
	tick := time.NewTicker(c.o.HeadEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		h, send := c.headToSend()
		if !send {
			continue
		}
		e := c.epoch()
		err := c.roundTrip(ctx, h)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.problem(err)
			continue
		}
		c.reached(e)
		c.tookHead(h)
	}
}

// sendEnded tells gatewayd how an approval ended, so that it can edit the
// post: a few tries, then it gives up (the outage is already logged).
// no_such_approval is normal: gatewayd restarted, or never posted it.
func (c *Client) sendEnded(ctx context.Context, e wire.ApprovalEnded) {
	b := c.newBackoff()
	for try := 1; ; try++ {
		ep := c.epoch()
		err := c.roundTrip(ctx, e)
		if ctx.Err() != nil {
			return
		}
		var r *refusedError
		switch {
		case err == nil:
			c.reached(ep)
			return
		case errors.As(err, &r) && r.e.Code == wire.NoSuchApproval:
			c.reached(ep)
			c.o.Log(fmt.Sprintf("brokerd: gatewayd has no post for approval %d (it restarted, or never posted it); that it ended (%s) is not shown on Mattermost",
				e.Approval, e.End))
			return
		}
		c.problem(err)
		if try == endTries || !b.wait(ctx) {
			return
		}
	}
}

// problem logs a failed exchange: a reply that breaks the protocol each
// time, a failure to reach gatewayd once per outage.
func (c *Client) problem(err error) {
	var inv *invalidError
	if errors.As(err, &inv) {
		c.invalid(inv.why)
		return
	}
	c.unreachable(err)
}

// invalid logs something gatewayd sent that brokerd ignores.
func (c *Client) invalid(why string) {
	c.o.Log(fmt.Sprintf("brokerd: gatewayd on %s sent something brokerd does not accept, and it is ignored: %s",
		c.o.Socket, wire.Printable(why)), runbook.See("gatewayd-answer-invalid"))
}
