// Package gatewaytest is a stand-in gatewayd for brokerd's tests: it
// listens on gateway.sock, reads each connection's request frame, answers
// broker_start, audit_head, approval_ended and job_result itself, keeps
// every message it was sent, and hands each approval_request's connection
// to the test, which then writes what gatewayd would (approval_posted,
// owner_answer, or anything else).
package gatewaytest

import (
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// Gatewayd is a listening stand-in. Stop it with Close (the test's cleanup
// does too); Listen again on the same path is gatewayd coming back.
type Gatewayd struct {
	Path string
	// Requests gets each approval_request's connection.
	Requests chan *Request

	ln   *net.UnixListener
	wg   sync.WaitGroup
	done chan struct{} // closed by Close

	mu       sync.Mutex
	got      []wire.Message
	conns    map[net.Conn]bool
	reply    func(wire.Message) wire.Message
	changed  chan struct{} // closed and replaced when got grows
	closed   bool
	accepted int
}

// Request is one approval_request and its connection, held open.
type Request struct {
	Env  wire.Envelope
	Msg  wire.ApprovalRequest
	Conn net.Conn
}

// Send writes a reply to the request: wire.Reply(id, final, msg).
func (r *Request) Send(tb testing.TB, final bool, msg wire.Message) {
	tb.Helper()
	_ = r.Conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := wire.WriteEnvelope(r.Conn, wire.Reply(r.Env.ID, final, msg)); err != nil {
		tb.Fatalf("gatewayd: writing %s: %v", msg.Kind(), err)
	}
}

// SendRaw writes body as one frame, whatever it holds.
func (r *Request) SendRaw(tb testing.TB, body []byte) {
	tb.Helper()
	_ = r.Conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := wire.WriteFrame(r.Conn, body); err != nil {
		tb.Fatalf("gatewayd: writing a frame: %v", err)
	}
}

// Closed waits up to d for brokerd to close the connection.
func (r *Request) Closed(d time.Duration) bool {
	_ = r.Conn.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	for {
		if _, err := r.Conn.Read(b[:]); err != nil {
			ne, ok := err.(net.Error)
			return !ok || !ne.Timeout()
		}
	}
}

// Listen starts a stand-in on path, removing a stale socket first.
func Listen(tb testing.TB, path string) *Gatewayd {
	tb.Helper()
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		tb.Fatal(err)
	}
	g := &Gatewayd{Path: path, Requests: make(chan *Request, 64), ln: ln, conns: map[net.Conn]bool{}, changed: make(chan struct{}),
		done: make(chan struct{})}
	g.wg.Go(g.accept)
	tb.Cleanup(g.Close)
	return g
}

// JobPost is the post the stand-in names in its job_result_posted.
const JobPost = "j0bp0st4xz7wq2m9kdr3tn8vc1"

// SetReply makes f answer broker_start, audit_head, approval_ended and
// job_result (when f is nil, or returns nil: ok, and job_result_posted
// naming JobPost for a job_result).
func (g *Gatewayd) SetReply(f func(wire.Message) wire.Message) {
	g.mu.Lock()
	g.reply = f
	g.mu.Unlock()
}

// Close stops listening and closes every connection: gatewayd is gone.
func (g *Gatewayd) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	close(g.done)
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.ln.Close()
	g.wg.Wait()
}

// Got is every message received so far, approval requests included, in
// the order they arrived.
func (g *Gatewayd) Got() []wire.Message {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]wire.Message(nil), g.got...)
}

// Accepted is how many connections were accepted.
func (g *Gatewayd) Accepted() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.accepted
}

// Wait waits up to 10 s for the first message received at or after index
// from that cond accepts, and returns it with its index.
func (g *Gatewayd) Wait(tb testing.TB, from int, what string, cond func(wire.Message) bool) (wire.Message, int) {
	tb.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		for i := from; i < len(g.got); i++ {
			if cond(g.got[i]) {
				m := g.got[i]
				g.mu.Unlock()
				return m, i
			}
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			tb.Fatalf("gatewayd: timed out waiting for %s; got %+v", what, g.Got())
			return nil, 0
		}
	}
}

// Ended waits for the approval_ended of approval id.
func (g *Gatewayd) Ended(tb testing.TB, id uint64) wire.ApprovalEnded {
	tb.Helper()
	m, _ := g.Wait(tb, 0, "approval_ended", func(m wire.Message) bool {
		e, ok := m.(wire.ApprovalEnded)
		return ok && e.Approval == id
	})
	return m.(wire.ApprovalEnded)
}

// Request waits up to 10 s for the next approval_request.
func (g *Gatewayd) Request(tb testing.TB) *Request {
	tb.Helper()
	select {
	case r := <-g.Requests:
		return r
	case <-time.After(10 * time.Second):
		tb.Fatalf("gatewayd: no approval_request came; got %+v", g.Got())
		return nil
	}
}

func (g *Gatewayd) accept() {
	for {
		conn, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			conn.Close()
			return
		}
		g.conns[conn] = true
		g.accepted++
		g.mu.Unlock()
		g.wg.Go(func() { g.serve(conn) })
	}
}

// serve reads the request and answers it, or hands it to the test. The
// connection stays open until the test or brokerd closes it.
func (g *Gatewayd) serve(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	env, err := wire.ReadRequest(conn)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		g.drop(conn)
		return
	}
	g.mu.Lock()
	g.got = append(g.got, env.Msg)
	close(g.changed)
	g.changed = make(chan struct{})
	reply := g.reply
	g.mu.Unlock()
	if req, ok := env.Msg.(wire.ApprovalRequest); ok {
		select {
		case g.Requests <- &Request{Env: env, Msg: req, Conn: conn}:
		case <-g.done:
		}
		return // the test answers, and brokerd or Close closes it
	}
	var ans wire.Message = wire.OK{}
	if _, ok := env.Msg.(wire.JobResult); ok {
		ans = wire.JobResultPosted{Post: JobPost}
	}
	if reply != nil {
		if r := reply(env.Msg); r != nil {
			ans = r
		}
	}
	_ = wire.WriteEnvelope(conn, wire.Reply(env.ID, true, ans))
	g.drop(conn)
}

func (g *Gatewayd) drop(conn net.Conn) {
	conn.Close()
	g.mu.Lock()
	delete(g.conns, conn)
	g.mu.Unlock()
}
