package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"boxmaker/wire"
)

// Bounds on one exchange with gatewayd. The wait for an owner's answer has
// none: it lasts as long as the approval.
const (
	dialTimeout  = 5 * time.Second
	writeTimeout = 10 * time.Second
	replyTimeout = 10 * time.Second
)

// requestID is the id of every request: each has its own connection.
const requestID = 1

// refusedError is gatewayd's error reply to a request.
type refusedError struct{ e wire.WireError }

func (r *refusedError) Error() string {
	return fmt.Sprintf("gatewayd answered %s: %s", r.e.Code, r.e.Detail)
}

// invalidError is a reply that breaks the protocol: gatewayd is there, but
// what it said is ignored.
type invalidError struct{ why string }

func (e *invalidError) Error() string { return e.why }

// dial connects to gatewayd and sends msg as the request. The connection
// closes when ctx ends, which ends any read or write on it.
func (c *Client) dial(ctx context.Context, msg wire.Message) (net.Conn, func(), error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", c.o.Socket)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	closeAll := func() {
		stop()
		conn.Close()
	}
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := wire.WriteEnvelope(conn, wire.Request(requestID, msg)); err != nil {
		closeAll()
		return nil, nil, err
	}
	return conn, closeAll, nil
}

// roundTrip sends msg on a connection of its own and reads the one final
// reply: nil for ok, a *refusedError for an error reply, an *invalidError
// for anything else gatewayd sends, or the failure to reach it.
func (c *Client) roundTrip(ctx context.Context, msg wire.Message) error {
	conn, closeConn, err := c.dial(ctx, msg)
	if err != nil {
		return err
	}
	defer closeConn()
	_ = conn.SetReadDeadline(time.Now().Add(replyTimeout))
	env, err := wire.ReadEnvelope(conn)
	if err != nil {
		return readError(msg.Kind(), err)
	}
	if env.ID != requestID || !env.Final {
		return &invalidError{fmt.Sprintf("its answer to %s is not one final reply to it (id %d, final %t)", msg.Kind(), env.ID, env.Final)}
	}
	switch m := env.Msg.(type) {
	case wire.OK:
		return nil
	case wire.WireError:
		return &refusedError{m}
	}
	return &invalidError{fmt.Sprintf("it answered %s with %s, not ok", msg.Kind(), env.Msg.Kind())}
}

// readError says why a reply could not be read: a frame gatewayd should
// not have sent is an *invalidError, a connection that failed is itself.
func readError(kind string, err error) error {
	var de *wire.DecodeError
	var ve *wire.VersionError
	if errors.As(err, &de) || errors.As(err, &ve) || errors.Is(err, wire.ErrEmptyFrame) || errors.Is(err, wire.ErrFrameTooLarge) {
		return &invalidError{fmt.Sprintf("its answer to %s is not a valid frame: %v", kind, err)}
	}
	return fmt.Errorf("reading its answer to %s: %w", kind, err)
}
