// Package gateway is brokerd's side of gateway.sock (issue 14; the protocol
// is wire/gateway.go): brokerd is the client, gatewayd listens. It tells
// gatewayd that brokerd started (broker_start), sends each pending
// approval to be posted on Mattermost (approval_request) and waits on that
// connection for an owner's answer, says how every approval ended
// (approval_ended), and sends the audit log's head at least hourly while
// records are written (audit_head), so that a copy of the head is kept off
// the host.
//
// Nothing here can approve a call on its own, and nothing about gatewayd
// can hold one up. Why: gatewayd is another process, reading a chat
// server, behind a socket; if its words could approve by any other path
// than the owner's own (bxctl's), a bug or a compromise there would run
// tools no owner approved, and an outage there would stop calls the owner
// can still answer at the terminal. So the only way an approval is ended
// from here is
// approvals.Table's Approve or Refuse, called with an owner_answer that
// came on the connection of that very approval and passed checkAnswer:
// approved or refused, by and post shaped like Mattermost ids, a printable
// reason of at most 500 bytes. gatewayd alone decides whose reactions and
// replies count (its owners list); this package makes sure that what it
// forwards is one well-formed answer to one approval, recorded with who
// gave it. Everything else gatewayd sends, and every failure to reach it,
// is logged and changes nothing: the call stays pending, bxctl approves and
// refuses as before, and the expiry runs as before. The calls into this
// package from the broker (Pending, and the function it returns) start
// goroutines and return at once.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// Options configure a Client.
type Options struct {
	// Socket is gateway.sock ([sockets] gateway).
	Socket string
	// Approvals is the table an owner's answer ends an approval in.
	Approvals *approvals.Table
	// Head is the audit log's head now: its last synced record, or false
	// while the log has none.
	Head func() (wire.AuditHead, bool)
	// Log prints lines for the owner, together (brokerd's stderr).
	Log func(lines ...string)
	// Now is the clock answers are checked against expiry with.
	Now func() time.Time

	// HeadEvery is how often the head is sent when records were written
	// since the last head gatewayd took (1 h when zero). RetryMin and
	// RetryMax bound the wait between tries while gatewayd cannot be
	// reached (1 s and 30 s when zero); EndGrace is how long Close lets
	// the last approval_ended messages try (2 s when zero). Tests shorten
	// them.
	HeadEvery, RetryMin, RetryMax, EndGrace time.Duration
}

// Defaults of the intervals.
const (
	DefaultHeadEvery = time.Hour
	DefaultRetryMin  = time.Second
	DefaultRetryMax  = 30 * time.Second
	DefaultEndGrace  = 2 * time.Second
)

// Client is brokerd's connection to gatewayd. Every goroutine it starts is
// stopped and waited for by Close.
type Client struct {
	o      Options
	broker string // this run's instance id

	ctx    context.Context // ends the requests, broker_start and the heads
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// The approval_ended messages have a context of their own: those of
	// calls abandoned as brokerd stops are still sent, within EndGrace.
	endCtx    context.Context
	endCancel context.CancelFunc
	endWG     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	started bool // gatewayd took this run's broker_start
	down    bool // an outage is under way, and was logged
	// outages counts them: an answer on a connection made before the
	// outage began (one already in flight) does not end it.
	outages  uint64
	lastHead *wire.AuditHead // the last head gatewayd took
}

// Start makes a client with a new instance id and starts, in the
// background, the broker_start message (tried until gatewayd takes it) and
// the hourly heads. It never waits for gatewayd.
func Start(o Options) *Client {
	if o.HeadEvery <= 0 {
		o.HeadEvery = DefaultHeadEvery
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(DefaultRetryMax, o.RetryMin)
	}
	if o.EndGrace <= 0 {
		o.EndGrace = DefaultEndGrace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Client{o: o, broker: newInstance()}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.endCtx, c.endCancel = context.WithCancel(context.Background())
	c.wg.Go(func() { c.sendStart(c.ctx) })
	c.wg.Go(func() { c.sendHeads(c.ctx) })
	return c
}

// newInstance is a random instance id: 32 lowercase hex digits.
func newInstance() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
	return hex.EncodeToString(b[:])
}

// Broker is this run's instance id, as broker_start and every
// approval_request carry it.
func (c *Client) Broker() string { return c.broker }

// Pending sends p to gatewayd to be posted, in the background, and returns
// what the broker calls once the approval has ended (its Approval record
// written, or, abandoned, dropped): that closes the request's connection
// and tells gatewayd how it ended. Both return at once. It implements
// broker.Gateway.
func (c *Client) Pending(p wire.PendingApproval) (ended func(wire.ApprovalEnded)) {
	req := wire.ApprovalRequest{Broker: c.broker, Approval: p.Approval, Session: p.Session, Call: p.Call, Tool: p.Tool,
		Arguments: p.Arguments, Grant: p.Grant, Taint: p.Taint, Created: p.Created, Expires: p.Expires,
		Digest: wire.CallDigest(p.Tool, p.Arguments, p.Grant, p.Taint)}
	// The broker calls Pending after the Decision record is synced, and
	// Head moves before Append returns: the head names that record or a
	// later one, never nothing.
	req.Head, _ = c.o.Head()
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan struct{})
	if !c.spawn(&c.wg, func() {
		defer close(done)
		c.request(ctx, req)
	}) {
		cancel()
		return func(wire.ApprovalEnded) {}
	}
	var once sync.Once
	return func(e wire.ApprovalEnded) {
		once.Do(func() {
			cancel()
			c.spawn(&c.endWG, func() {
				<-done // its connection is closed before gatewayd is told
				c.sendEnded(c.endCtx, e)
			})
		})
	}
}

// spawn runs f on a goroutine counted in wg, unless the client is closed.
func (c *Client) spawn(wg *sync.WaitGroup, f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	wg.Go(f)
	return true
}

// Close stops every request, broker_start and the heads, closing their
// connections; lets the approval_ended messages already started try for
// EndGrace; and waits for every goroutine.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	ended := make(chan struct{})
	go func() {
		c.endWG.Wait()
		close(ended)
	}()
	grace := time.NewTimer(c.o.EndGrace)
	select {
	case <-ended:
	case <-grace.C:
		c.endCancel()
		<-ended
	}
	grace.Stop()
	c.endCancel()
	c.wg.Wait()
}

// epoch is taken before a connection is made, and given to reached.
func (c *Client) epoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outages
}

// unreachable notes a failure to reach gatewayd, or its refusal: once per
// outage, the owner is told that approvals still work locally.
func (c *Client) unreachable(err error) {
	c.mu.Lock()
	first := !c.down
	if first {
		c.down = true
		c.outages++
	}
	c.mu.Unlock()
	if first {
		c.o.Log(fmt.Sprintf("brokerd: gatewayd on %s cannot be reached or refuses (%s); approvals are not posted on Mattermost until it answers, and they still work with `bxctl approve` and `bxctl refuse`",
			c.o.Socket, wire.Printable(err.Error())), runbook.See("gatewayd-unreachable"))
	}
}

// reached notes an answer that shows gatewayd is back, on a connection
// made at epoch: it ends the outage if the connection was made after the
// outage began (an answer that was already on its way when gatewayd went
// away shows nothing).
func (c *Client) reached(epoch uint64) {
	c.mu.Lock()
	was := c.down && epoch == c.outages
	if was {
		c.down = false
	}
	c.mu.Unlock()
	if was {
		c.o.Log(fmt.Sprintf("brokerd: gatewayd on %s answers again", c.o.Socket))
	}
}

// Status is how gatewayd stands for bxctl doctor: whether it took this
// run's broker_start, whether an outage is under way (the last try to
// reach it failed or was refused), and the last audit head it took.
func (c *Client) Status() (started, down bool, head *wire.AuditHead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started, c.down, c.lastHead
}

// tookHead notes the last head gatewayd took.
func (c *Client) tookHead(h wire.AuditHead) {
	c.mu.Lock()
	c.lastHead = &h
	c.mu.Unlock()
}

// headToSend is the head when records were written since the last head
// gatewayd took.
func (c *Client) headToSend() (wire.AuditHead, bool) {
	h, ok := c.o.Head()
	if !ok {
		return h, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return h, c.lastHead == nil || *c.lastHead != h
}

// backoff is the wait between tries: from RetryMin, doubling, up to
// RetryMax.
type backoff struct {
	next, min, max time.Duration
}

func (c *Client) newBackoff() *backoff {
	return &backoff{next: c.o.RetryMin, min: c.o.RetryMin, max: c.o.RetryMax}
}

// wait sleeps the next interval and doubles it; false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(2*b.next, b.max)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (b *backoff) reset() { b.next = b.min }
