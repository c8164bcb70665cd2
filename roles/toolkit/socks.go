package toolkit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// SOCKS5 (RFC 1928), the client half, just what http_fetch needs: no
// authentication, CONNECT, and the destination always as a name (address
// type 3), so that the proxy, not the container, resolves it.
const (
	socksVersion  = 5
	socksNoAuth   = 0
	socksConnect  = 1
	socksAtypName = 3
	socksAtypIPv4 = 1
	socksAtypIPv6 = 4
)

// socksReplies are RFC 1928's reply codes as the model should read them.
var socksReplies = map[byte]string{
	1: "the egress proxy failed",
	2: "the egress proxy refused it: the host is not allowed for this call (not in the grant, an IP address, not port 443, or it resolves to a private address)",
	3: "network unreachable",
	4: "host unreachable (the name did not resolve, or no address answered)",
	5: "connection refused",
	6: "timed out",
	7: "the egress proxy does not support the request",
	8: "the egress proxy refused the address type: only host names are sent",
}

// dialSOCKS connects to addr ("host:port") through the proxy's Unix socket.
func dialSOCKS(ctx context.Context, proxy, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || len(host) == 0 || len(host) > 255 {
		return nil, fmt.Errorf("cannot ask the egress proxy for %q", addr)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", proxy)
	if err != nil {
		return nil, fmt.Errorf("the egress proxy is not reachable: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if err := socksHandshake(conn, host, uint16(port)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

func socksHandshake(rw io.ReadWriter, host string, port uint16) error {
	if _, err := rw.Write([]byte{socksVersion, 1, socksNoAuth}); err != nil {
		return err
	}
	var greet [2]byte
	if _, err := io.ReadFull(rw, greet[:]); err != nil {
		return fmt.Errorf("the egress proxy closed the connection: %w", err)
	}
	if greet[0] != socksVersion || greet[1] != socksNoAuth {
		return errors.New("the egress proxy answered in an unknown way")
	}
	req := append([]byte{socksVersion, socksConnect, 0, socksAtypName, byte(len(host))}, host...)
	req = binary.BigEndian.AppendUint16(req, port)
	if _, err := rw.Write(req); err != nil {
		return err
	}
	var head [4]byte
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return fmt.Errorf("the egress proxy closed the connection: %w", err)
	}
	if head[0] != socksVersion {
		return errors.New("the egress proxy answered in an unknown way")
	}
	if head[1] != 0 {
		if msg, ok := socksReplies[head[1]]; ok {
			return errors.New(msg)
		}
		return fmt.Errorf("the egress proxy refused it (code %d)", head[1])
	}
	// The bound address, which nothing here needs.
	var skip int
	switch head[3] {
	case socksAtypIPv4:
		skip = 4
	case socksAtypIPv6:
		skip = 16
	case socksAtypName:
		var n [1]byte
		if _, err := io.ReadFull(rw, n[:]); err != nil {
			return err
		}
		skip = int(n[0])
	default:
		return errors.New("the egress proxy answered in an unknown way")
	}
	_, err := io.ReadFull(rw, make([]byte, skip+2))
	return err
}
