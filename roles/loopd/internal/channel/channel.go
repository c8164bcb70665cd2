// Package channel serves the channel protocol on loop.sock (wire/channel.go):
// one request per connection; a say is answered by the turn's events as
// turn_event frames, the last one final; a health request (where the
// server has a Health) by one health_report; any other kind gets error
// forbidden, and a frame that cannot be read gets its error
// (wire.ErrorCodeFor). Either way only that connection closes.
package channel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// SayFunc runs one turn, calling emit for each event in order; the last
// event is TurnReply or TurnFailed.
type SayFunc func(ctx context.Context, session *wire.SessionID, text string, emit func(wire.TurnEvent))

// Timeouts for a client: to send its request, and to take each frame.
// Neither bounds a turn, which lasts as long as the model and tools take.
const (
	RequestTimeout = 30 * time.Second
	WriteTimeout   = 30 * time.Second
)

// Server answers connections with say.
type Server struct {
	Say SayFunc
	// Health answers bxctl doctor's health request (issue 27); nil
	// refuses it like any kind but say.
	Health func(ctx context.Context) wire.HealthReport
	// Log gets a line for each refused request (nil drops it).
	Log func(string)
}

// Serve accepts connections on ln until ctx ends, then closes ln, waits
// for every connection's handler to return, and returns nil. Each
// connection is served on its own goroutine, owned by Serve.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("loop.sock: %w", err)
			}
			// Out of file descriptors, say: wait and try again rather
			// than stop serving.
			s.log("loop.sock: %v", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(ctx, conn)
		}()
	}
}

func (s *Server) log(format string, args ...any) {
	if s.Log != nil {
		s.Log(fmt.Sprintf(format, args...))
	}
}

// handle serves one connection: one request, then close.
func (s *Server) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	// Shutting down closes the connection, which ends a blocked read or write.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	_ = conn.SetReadDeadline(time.Now().Add(RequestTimeout))
	env, err := wire.ReadRequest(conn)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return // connected and left without a word
		}
		// env.ID is set when the envelope's head was read before the
		// error; a frame that could not be read at all is answered as id 0.
		id := env.ID
		var ve *wire.VersionError
		if errors.As(err, &ve) {
			id = ve.ID
		}
		s.reply(conn, id, wire.WireError{Code: wire.ErrorCodeFor(err), Detail: err.Error()})
		return
	}
	if _, ok := env.Msg.(wire.Health); ok && s.Health != nil {
		s.reply(conn, env.ID, s.Health(ctx))
		return
	}
	say, ok := env.Msg.(wire.Say)
	if !ok {
		s.log("loop.sock: refused a %s message: only say is accepted here; %s", env.Msg.Kind(), runbook.See("socket-forbidden"))
		s.reply(conn, env.ID, wire.WireError{Code: wire.Forbidden,
			Detail: fmt.Sprintf("loop.sock accepts only say, not %s", env.Msg.Kind())})
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	w := &eventWriter{conn: conn, id: env.ID}
	s.Say(ctx, say.Session, say.Text, w.emit)
}

func (s *Server) reply(conn net.Conn, id uint64, msg wire.Message) {
	_ = conn.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_ = wire.WriteEnvelope(conn, wire.Reply(id, true, msg)) // the connection closes either way
}

// eventWriter sends a turn's events as frames. After a failed write it
// drops the rest: the turn goes on (its records are in the log), but the
// client is gone.
type eventWriter struct {
	conn   net.Conn
	id     uint64
	broken bool
}

func (w *eventWriter) emit(ev wire.TurnEvent) {
	if w.broken {
		return
	}
	final := false
	switch ev.(type) {
	case wire.TurnReply, wire.TurnFailed:
		final = true
	}
	_ = w.conn.SetWriteDeadline(time.Now().Add(WriteTimeout))
	err := wire.WriteEnvelope(w.conn, wire.Reply(w.id, final, ev))
	if err != nil && final && errors.Is(err, wire.ErrFrameTooLarge) {
		// The client must still learn how the turn ended.
		err = wire.WriteEnvelope(w.conn, wire.Reply(w.id, true, wire.TurnFailed{
			Message: "the answer is larger than one frame (1 MiB) and cannot be sent; it is in the session log"}))
	}
	if err != nil && !errors.Is(err, wire.ErrFrameTooLarge) {
		w.broken = true
	}
}
