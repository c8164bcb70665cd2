package egress

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"boxmaker/policy"
)

// fakeConn is a net.Conn that reads from in and keeps what is written.
type fakeConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *fakeConn) Read(b []byte) (int, error)       { return c.in.Read(b) }
func (c *fakeConn) Write(b []byte) (int, error)      { return c.out.Write(b) }
func (c *fakeConn) Close() error                     { return nil }
func (c *fakeConn) LocalAddr() net.Addr              { return &net.UnixAddr{Name: "egress.sock", Net: "unix"} }
func (c *fakeConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Net: "unix"} }
func (c *fakeConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

var fuzzHosts = []string{"*.example.com", "api.example.org"}

// naiveSOCKS is the oracle: RFC 1928 read the plain way, with the rules of
// docs/decisions.md ("The egress proxy"): version 5, the no-authentication
// method offered, CONNECT, a name (type 3), port 443, a valid host name
// that a grant pattern matches and that is no IP literal.
func naiveSOCKS(in []byte) (host string, ok bool) {
	if len(in) < 2 || in[0] != 5 || len(in) < 2+int(in[1]) || !slices.Contains(in[2:2+int(in[1])], 0) {
		return "", false
	}
	req := in[2+int(in[1]):]
	if len(req) < 5 || req[0] != 5 || req[1] != 1 || req[3] != 3 || len(req) < 5+int(req[4])+2 {
		return "", false
	}
	name := string(req[5 : 5+int(req[4])])
	if binary.BigEndian.Uint16(req[5+int(req[4]):]) != 443 {
		return "", false
	}
	if _, err := netip.ParseAddr(name); err == nil || !policy.ValidHost(name) {
		return "", false
	}
	for _, p := range fuzzHosts {
		if policy.HostMatches(p, name) {
			return name, true
		}
	}
	return "", false
}

// socksRequest is a well-formed greeting and CONNECT for name:port.
func socksRequest(atyp byte, name []byte, port uint16) []byte {
	b := []byte{5, 1, 0, 5, 1, 0, atyp}
	if atyp == atypName {
		b = append(b, byte(len(name)))
	}
	return binary.BigEndian.AppendUint16(append(b, name...), port)
}

// FuzzSOCKSHandshake: whatever bytes the tool sends, the handshake agrees
// with the naive reading on whether and where to connect, answers only in
// well-formed SOCKS5 messages, and never panics.
func FuzzSOCKSHandshake(f *testing.F) {
	for _, seed := range [][]byte{
		socksRequest(atypName, []byte("api.example.com"), 443),
		socksRequest(atypName, []byte("api.example.org"), 443),
		socksRequest(atypName, []byte("example.com"), 443),
		socksRequest(atypName, []byte("api.example.com"), 80),
		socksRequest(atypName, []byte("127.0.0.1"), 443),
		socksRequest(atypName, []byte("::1"), 443),
		socksRequest(atypName, []byte("a.example.com."), 443),
		socksRequest(atypName, []byte("API.example.com"), 443),
		socksRequest(atypName, []byte("a.example.com\x00x"), 443),
		socksRequest(atypName, nil, 443),
		socksRequest(atypIPv4, []byte{127, 0, 0, 1}, 443),
		socksRequest(atypIPv6, make([]byte, 16), 443),
		{5, 0},
		{5, 2, 1, 2},
		{4, 1, 0, 80, 127, 0, 0, 1, 0},
		{5, 1, 0, 5, 2, 0, 3, 3, 'a', '.', 'b', 1, 187},
		{5, 1, 0, 5, 1, 0, 3, 255},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p := &Proxy{hosts: fuzzHosts, conns: map[net.Conn]struct{}{}}
		c := &fakeConn{in: bytes.NewReader(in)}
		host, ok := p.handshake(c)
		wantHost, wantOK := naiveSOCKS(in)
		if ok != wantOK || host != wantHost {
			t.Fatalf("%q: handshake %q %v, naively %q %v", in, host, ok, wantHost, wantOK)
		}
		out := c.out.Bytes()
		if ok {
			if !bytes.Equal(out, []byte{5, 0}) {
				t.Fatalf("%q: allowed after writing %v", in, out)
			}
			return
		}
		// Refused: nothing, the greeting's refusal, or the greeting and a
		// reply with an empty IPv4 address.
		switch {
		case len(out) == 0, bytes.Equal(out, []byte{5, 0xff}), bytes.Equal(out, []byte{5, 0}):
		case len(out) == 12 && bytes.Equal(out[:2], []byte{5, 0}) && out[2] == 5 && slices.Contains([]byte{repNotAllowed, repCommand, repAddrType}, out[3]) &&
			bytes.Equal(out[4:], []byte{0, atypIPv4, 0, 0, 0, 0, 0, 0}):
		default:
			t.Fatalf("%q: refused after writing %v", in, out)
		}
		if len(p.Refusals()) > 1 {
			t.Fatalf("%q: %d refusals for one request", in, len(p.Refusals()))
		}
	})
}
