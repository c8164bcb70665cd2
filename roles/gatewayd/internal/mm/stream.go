package mm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
)

// Handler receives what Listen sees. All three methods are called on
// Listen's goroutine, one at a time, in order.
type Handler interface {
	// Connected is called after every successful connection and
	// authentication, before any event of that connection: the place to
	// catch up on what was missed while no connection was up (PostsSince).
	// Events that arrive meanwhile wait, in order, for it to return.
	Connected(ctx context.Context)
	// Event is called for every event of the connection, in the server's
	// order. Replies to the client's own requests are not events.
	Event(ctx context.Context, ev Event)
	// Disconnected is called every time a connection ends or a connection
	// attempt fails, with the reason; when Listen's context ends, the
	// reason wraps the context's error.
	Disconnected(err error)
}

// maxQueued bounds the events that wait for the Handler. A handler that
// falls this far behind ends the connection: the reconnection's catch-up
// (Connected) gets what was dropped, without holding it all in memory.
const maxQueued = 1024

// errQueueFull ends a connection whose handler fell behind.
var errQueueFull = fmt.Errorf("mattermost: more than %d websocket events waiting for the handler; reconnecting to catch up", maxQueued)

// Listen keeps a WebSocket connection to the server (/api/v4/websocket,
// authenticated with authentication_challenge), passes its events to h,
// and reconnects, with c.Backoff between attempts, whenever it fails or
// ends, until ctx ends; then it returns ctx.Err(). It runs on the caller's
// goroutine; the goroutines it starts for a connection (a reader and a
// pinger) end before it returns.
func (c *Client) Listen(ctx context.Context, h Handler) error {
	attempt := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		authed, err := c.session(ctx, h)
		if authed {
			attempt = 0
		}
		h.Disconnected(c.scrub(err))
		if err := ctx.Err(); err != nil {
			return err
		}
		t := time.NewTimer(c.Backoff.Next(attempt))
		attempt = min(attempt+1, 62)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// wsURL is the WebSocket's address: ws:// for http://, wss:// for https://.
func (c *Client) wsURL() string {
	return "ws" + strings.TrimPrefix(c.base, "http") + "/api/v4/websocket"
}

// reader reads one connection's messages into frames, which it closes
// when the connection ends, err holding why.
type reader struct {
	frames chan []byte
	err    error // set before frames is closed
}

func (r *reader) run(ctx context.Context, conn *websocket.Conn) {
	defer close(r.frames)
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			r.err = err
			return
		}
		if typ != websocket.MessageText {
			r.err = errors.New("mattermost: the server sent a binary websocket message")
			return
		}
		select {
		case r.frames <- b:
		default:
			r.err = errQueueFull
			return
		}
	}
}

// session runs one connection: dial, authenticate, Connected, events. It
// says whether the connection was authenticated, and why it ended.
func (c *Client) session(ctx context.Context, h Handler) (authed bool, err error) {
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	dialCtx, dialCancel := context.WithTimeout(connCtx, c.requestTimeout())
	conn, resp, err := websocket.Dial(dialCtx, c.wsURL(), &websocket.DialOptions{HTTPClient: c.hc})
	dialCancel()
	if err != nil {
		if resp != nil && resp.StatusCode != 101 {
			return false, &APIError{Method: "GET", URL: c.base + "/api/v4/websocket", Status: resp.StatusCode}
		}
		return false, fmt.Errorf("mattermost: websocket %s: %w", c.wsURL(), err)
	}
	limit := c.ReadLimit
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	conn.SetReadLimit(limit)
	rd := &reader{frames: make(chan []byte, maxQueued)}
	var wg sync.WaitGroup
	var pingErr atomic.Pointer[error]
	defer func() {
		cancel()
		conn.CloseNow()
		wg.Wait()
	}()
	wg.Go(func() { rd.run(connCtx, conn) })
	// ended says why the connection ended, once frames is closed: a
	// missing pong, or what the reader saw.
	ended := func() error {
		if p := pingErr.Load(); p != nil {
			return *p
		}
		if ctx.Err() != nil {
			return fmt.Errorf("mattermost: websocket closed: %w", ctx.Err())
		}
		return fmt.Errorf("mattermost: websocket %s: %w", c.wsURL(), rd.err)
	}

	pending, err := c.authenticate(connCtx, conn, rd, ended)
	if err != nil {
		return false, err
	}
	wg.Go(func() { c.pingLoop(connCtx, conn, &pingErr) })
	h.Connected(ctx)
	var seq seqCheck
	for _, f := range pending {
		if err := seq.deliver(ctx, h, f); err != nil {
			return true, err
		}
	}
	for b := range rd.frames {
		f, err := parseFrame(b)
		if err != nil {
			return true, err
		}
		if err := seq.deliver(ctx, h, f); err != nil {
			return true, err
		}
	}
	return true, ended()
}

// authenticate sends the authentication_challenge (seq 1) and waits for
// its reply. The server sends hello, and may send events, before the
// reply; they are returned to be delivered after Connected. A bad token
// gets no FAIL reply: the server closes the connection.
func (c *Client) authenticate(ctx context.Context, conn *websocket.Conn, rd *reader, ended func() error) ([]frame, error) {
	challenge, err := json.Marshal(struct {
		Seq    int64  `json:"seq"`
		Action string `json:"action"`
		Data   struct {
			Token string `json:"token"`
		} `json:"data"`
	}{Seq: 1, Action: "authentication_challenge", Data: struct {
		Token string `json:"token"`
	}{c.token()}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.requestTimeout())
	defer cancel()
	err = conn.Write(ctx, websocket.MessageText, challenge)
	clear(challenge)
	if err != nil {
		return nil, fmt.Errorf("mattermost: websocket %s: sending authentication_challenge: %w", c.wsURL(), err)
	}
	var pending []frame
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("mattermost: websocket %s: no answer to authentication_challenge: %w", c.wsURL(), ctx.Err())
		case b, ok := <-rd.frames:
			if !ok {
				return nil, fmt.Errorf("mattermost: websocket closed before authentication succeeded (the server closes it for a token it refuses): %w", ended())
			}
			f, err := parseFrame(b)
			var re *ReplyError
			switch {
			case errors.As(err, &re) && re.Seq == 1:
				re.Message = clipLine(c.redact(re.Message))
				return nil, fmt.Errorf("mattermost: websocket authentication refused: %w", re)
			case err != nil:
				return nil, err
			case f.reply && f.replySeq == 1:
				return pending, nil
			case f.reply:
			default:
				pending = append(pending, f)
			}
		}
	}
}

// pingLoop pings every PingInterval; a pong missing for as long closes
// the connection, recording why in pingErr.
func (c *Client) pingLoop(ctx context.Context, conn *websocket.Conn, pingErr *atomic.Pointer[error]) {
	every := c.PingInterval
	if every <= 0 {
		every = DefaultPingInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := conn.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				e := fmt.Errorf("mattermost: websocket %s: no pong within %s, the connection is dead: %w", c.wsURL(), every, err)
				pingErr.Store(&e)
				conn.CloseNow()
			}
			return
		}
	}
}

// seqCheck follows the events' seq: the server numbers the events of a
// connection 0, 1, 2, ... and drops events for a connection that falls
// behind; a gap means something was lost, and the connection is ended so
// that the reconnection catches up.
type seqCheck struct {
	next    int64
	started bool
}

func (s *seqCheck) deliver(ctx context.Context, h Handler, f frame) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mattermost: websocket closed: %w", err)
	}
	if f.hasSeq {
		if s.started && f.seq != s.next {
			return fmt.Errorf("mattermost: websocket event seq %d, expected %d: the server dropped events; reconnecting to catch up", f.seq, s.next)
		}
		s.started, s.next = true, f.seq+1
	}
	if f.reply {
		return nil
	}
	h.Event(ctx, f.ev)
	return nil
}
