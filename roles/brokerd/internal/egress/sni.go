package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"

	"boxmaker/runbook"
)

// The blind relay's one look inside (docs/decisions.md, "The egress proxy
// forwards only what it checked"). Many hosts share an address (a CDN's
// front serves thousands of names on one), and pick the site a TLS
// connection is for by the name in its ClientHello (SNI). A tool that
// connected to a granted name could otherwise ask there for any other
// site on the same front. So before anything goes to the host, the proxy
// reads the tool's ClientHello with crypto/tls's own parser and lets the
// connection on only when it asks, in the clear, for exactly the name
// the tool connected to; the bytes it read then go to the host unchanged,
// and the rest is relayed blind.

// ECH's extension (draft-ietf-tls-esni), and the ESNI draft's before it:
// either carries the name the tool wants encrypted, and the clear one is
// whatever the tool chose.
const (
	extECH  = 0xfe0d
	extESNI = 0xffce
)

var errHelloRead = errors.New("egress: ClientHello read")

// helloConn is the tool's connection as the ClientHello parser sees it:
// what it reads is kept, to go to the host, and what it writes (an alert
// when it stops) is dropped, so the tool sees nothing of it.
type helloConn struct {
	net.Conn
	read bytes.Buffer
}

func (h *helloConn) Read(b []byte) (int, error) {
	n, err := h.Conn.Read(b)
	h.read.Write(b[:n])
	return n, err
}

func (h *helloConn) Write(b []byte) (int, error) { return len(b), nil }

// checkHello reads the tool's ClientHello from c, on a connection to host
// that is relayed. It returns every byte it read, to be sent on first,
// and whether the connection may go on; when it may not, why says why,
// or is "" when there is nothing to say (the tool hung up before sending
// anything, or the proxy closed). The caller's deadline on c bounds the
// wait; crypto/tls bounds the size (a 64 KiB handshake message).
func (p *Proxy) checkHello(c net.Conn, host string) (hello []byte, why string, ok bool) {
	hc := &helloConn{Conn: c}
	var seen, hidden bool
	var name string
	tc := tls.Server(hc, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		seen, name = true, h.ServerName
		hidden = slices.Contains(h.Extensions, extECH) || slices.Contains(h.Extensions, extESNI)
		return nil, errHelloRead
	}})
	// Not closed: its Close would close c. It has written nothing to c.
	tc.HandshakeContext(p.ctx)
	switch {
	case p.ctx.Err() != nil, !seen && hc.read.Len() == 0:
		return nil, "", false
	case !seen:
		why = "the tool sent something that is not a TLS ClientHello"
	case hidden:
		why = "the tool's TLS hid the name it asked for (Encrypted Client Hello)"
	case name == "":
		why = "the tool's TLS asked for no name"
	case asciiLower(name) != host:
		why = fmt.Sprintf("the tool's TLS asked for the name %q", name)
	default:
		return hc.read.Bytes(), "", true
	}
	return nil, fmt.Sprintf("%s: %s; %s", host, why, runbook.See("egress-tls-refused")), false
}

// asciiLower lowercases A to Z only: strings.ToLower would map some
// non-ASCII letters (the Kelvin sign) onto ASCII ones, and a name that
// differs from host in its bytes is another name to the host.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
