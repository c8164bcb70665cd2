package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/user"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/roles/brokerd/internal/admin"
	"boxmaker/roles/brokerd/internal/stages"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// socket is one of brokerd's two sockets and the kinds it accepts.
type socket struct {
	name    string // "broker.sock" or "admin.sock", for messages
	accepts string // the accepted kinds, for messages
	ok      func(wire.Message) bool
}

var (
	brokerSock = socket{"broker.sock", "tool_request", func(m wire.Message) bool {
		_, ok := m.(wire.ToolRequest)
		return ok
	}}
	adminSock = socket{"admin.sock", "approvals, approve, refuse, check_grants, health, and the notes and jobs requests", func(m wire.Message) bool {
		switch m.(type) {
		case wire.Approvals, wire.Approve, wire.Refuse, wire.CheckGrants, wire.Health,
			wire.NotesList, wire.NoteShow, wire.NotePromote, wire.NoteDelete, wire.JobsList, wire.JobRunNow:
			return true
		}
		return false
	}}
)

// writeTimeout bounds each frame written to a client that does not read.
const writeTimeout = 10 * time.Second

// handle serves one connection: one request, its answer, then close. A
// request that cannot be read is answered with its error code where a reply
// is possible; either way only this connection closes.
func (s *Server) handle(ctx context.Context, conn net.Conn, sock socket) {
	defer conn.Close()
	// Stopping closes the connection, which ends a blocked read or write.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	// A client that connects and sends nothing, or half a frame, is cut off
	// rather than holding this goroutine for ever.
	_ = conn.SetReadDeadline(time.Now().Add(s.requestTimeout))
	env, err := wire.ReadRequest(conn)
	if err != nil {
		var ne net.Error
		if errors.Is(err, io.EOF) || errors.As(err, &ne) && ne.Timeout() || errors.Is(err, net.ErrClosed) {
			return // gone, silent, or brokerd is stopping: no one to answer
		}
		id := env.ID
		var ve *wire.VersionError
		if errors.As(err, &ve) {
			id = ve.ID
		}
		reply(conn, id, wire.WireError{Code: wire.ErrorCodeFor(err), Detail: err.Error()})
		return
	}
	if !sock.ok(env.Msg) {
		s.log(fmt.Sprintf("brokerd: refused a %s message on %s, which accepts only %s", env.Msg.Kind(), sock.name, sock.accepts),
			runbook.See("socket-forbidden"))
		reply(conn, env.ID, wire.WireError{Code: wire.Forbidden,
			Detail: fmt.Sprintf("%s accepts only %s, not %s", sock.name, sock.accepts, env.Msg.Kind())})
		return
	}
	if req, ok := env.Msg.(wire.ToolRequest); ok {
		s.tool(ctx, conn, env.ID, req)
		return
	}
	answer(conn, s.admin.Answer(admin.WithOwner(ctx, peerName(conn)), env.ID, env.Msg))
}

// peerName is the user name of admin.sock's peer (SO_PEERCRED), for the
// audit records of what the owner does to notes: "uid <n>" when the uid
// has no name, "unknown" when the kernel says nothing.
func peerName(conn net.Conn) string {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return "unknown"
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return "unknown"
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		return "unknown"
	}
	id := strconv.FormatUint(uint64(cred.Uid), 10)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid-" + id
}

// answer writes an admin answer's frames. One that does not fit in a frame
// (a grants report of thousands of problems, say) is replaced by an error
// frame: the owner always gets an answer, never a closed connection
// (issue 12).
func answer(conn net.Conn, frames []wire.Envelope) {
	for _, e := range frames {
		_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		err := wire.WriteEnvelope(conn, e)
		if errors.Is(err, wire.ErrFrameTooLarge) {
			reply(conn, e.ID, wire.WireError{Code: wire.Internal,
				Detail: fmt.Sprintf("the %s answer is larger than one frame (1 MiB) and cannot be sent", e.Msg.Kind())})
			return
		}
		if err != nil {
			return
		}
	}
}

// tool answers a tool request on broker.sock.
func (s *Server) tool(ctx context.Context, conn net.Conn, id uint64, req wire.ToolRequest) {
	if s.stages != nil {
		clock := stages.Start()
		ctx = stages.With(ctx, clock)
		defer func() { stages.Mark(ctx, "reply"); s.stages(clock) }()
	}
	c := &loopdConn{conn: conn, id: id, gone: make(chan struct{})}
	resp := s.broker.Handle(ctx, req, c)
	c.stopWatching()
	if resp == nil {
		return // loopd left while the call waited
	}
	err := reply(conn, id, resp)
	if errors.Is(err, wire.ErrFrameTooLarge) {
		// The runtime caps output well below a frame; should one still not
		// fit, loopd must learn how the call ended.
		reply(conn, id, wire.FailedResponse{Message: "the result is larger than one frame (1 MiB) and cannot be sent"})
	}
}

func reply(conn net.Conn, id uint64, msg wire.Message) error {
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return wire.WriteEnvelope(conn, wire.Reply(id, true, msg))
}

// loopdConn is the broker's view of a loopd connection. While a call waits
// for approval, a goroutine reads the connection so that its close is seen
// at once: the pending entry is then removed and nothing is written.
type loopdConn struct {
	conn     net.Conn
	id       uint64
	gone     chan struct{}
	watching chan struct{} // closed when the reader returns; nil if none started
}

func (c *loopdConn) Pending(p wire.PendingResponse) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := wire.WriteEnvelope(c.conn, wire.Reply(c.id, false, p)); err != nil {
		return err
	}
	// The request deadline would end the wait for the owner; the watcher
	// reads until the connection closes or stopWatching.
	_ = c.conn.SetReadDeadline(time.Time{})
	c.watching = make(chan struct{})
	go c.watch()
	return nil
}

// watch reads until the connection fails: its close (EOF), brokerd
// stopping, or stopWatching's deadline. A client sends nothing more after
// its request, so anything it does send is discarded; one that shuts down
// its writing side while it waits is taken as gone (loopd never does).
func (c *loopdConn) watch() {
	defer close(c.watching)
	buf := make([]byte, 512)
	for {
		if _, err := c.conn.Read(buf); err != nil {
			close(c.gone)
			return
		}
	}
}

// Gone is closed when the connection closed while the call waited.
func (c *loopdConn) Gone() <-chan struct{} { return c.gone }

// stopWatching ends the reader, if one started, and waits for it.
func (c *loopdConn) stopWatching() {
	if c.watching == nil {
		return
	}
	_ = c.conn.SetReadDeadline(time.Unix(1, 0))
	<-c.watching
}
