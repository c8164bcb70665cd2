package egress

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"boxmaker/policy"
	"boxmaker/wire"
)

// SOCKS5 (RFC 1928), the server half: no authentication, CONNECT only, and
// the destination only as a name (address type 3). An address sent by the
// tool is refused: the proxy resolves names itself, so that it checks the
// addresses it dials.
const (
	socksVersion   = 5
	atypIPv4       = 1
	atypName       = 3
	atypIPv6       = 4
	cmdConnect     = 1
	repOK          = 0
	repFailure     = 1
	repNotAllowed  = 2
	repUnreachable = 4
	repRefused     = 5
	repCommand     = 7
	repAddrType    = 8
)

// port is the only destination port allowed: http_fetch is HTTPS.
const port = 443

// testHooks lets this package's tests, and only them (export_test.go),
// send a test host name to a local address. It is a package variable, not
// a field or a config key, so that no production code path can set it.
var testHooks struct {
	mu sync.Mutex
	// dial sends a name straight to an address, with no resolution and no
	// address check: a local HTTPS server standing in for a real host.
	dial map[string]netip.AddrPort
	// resolve answers for a name instead of DNS; the answers are checked
	// like any others.
	resolve map[string][]netip.Addr
	// lookup, when set, answers every other name instead of DNS, a call
	// at a time (a stand-in resolver that can change its answer); reroute
	// sends an address the proxy checked and chose to a local stand-in.
	lookup  func(host string) ([]netip.Addr, error)
	reroute map[netip.AddrPort]netip.AddrPort
	// roots, when set, replaces the system's roots for the TLS the
	// proxy itself opens to a host that gets the secret.
	roots *x509.CertPool
}

func (p *Proxy) serve(c net.Conn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	host, ok := p.handshake(c)
	if !ok {
		return
	}
	up, rep := p.connect(host)
	if rep != repOK {
		reply(c, rep)
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	if reply(c, repOK) != nil {
		return
	}
	if p.secret != nil && p.secret.covers(host) {
		c.SetDeadline(time.Time{}) // terminate sets its own
		p.terminate(c, up, host)
		return
	}
	// The tool's ClientHello, within a handshake's time, before anything
	// goes to the host (sni.go).
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	hello, why, ok := p.checkHello(c, host)
	if !ok {
		if why != "" {
			p.refuse("%s", why)
		}
		return
	}
	c.SetDeadline(time.Time{})
	if _, err := up.Write(hello); err != nil {
		return
	}
	relay(c, up)
}

// handshake reads the greeting and the request, and answers every refusal
// itself. It returns the host name asked for when it may be connected.
func (p *Proxy) handshake(c net.Conn) (string, bool) {
	var head [2]byte
	if _, err := io.ReadFull(c, head[:]); err != nil || head[0] != socksVersion {
		return "", false
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return "", false
	}
	if !slices.Contains(methods, 0) {
		c.Write([]byte{socksVersion, 0xff})
		return "", false
	}
	if _, err := c.Write([]byte{socksVersion, 0}); err != nil {
		return "", false
	}
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != socksVersion {
		return "", false
	}
	if req[1] != cmdConnect {
		p.refuse("a SOCKS5 command other than CONNECT (%d)", req[1])
		reply(c, repCommand)
		return "", false
	}
	switch req[3] {
	case atypName:
	case atypIPv4, atypIPv6:
		p.refuse("an IP address instead of a host name")
		reply(c, repAddrType)
		return "", false
	default:
		reply(c, repAddrType)
		return "", false
	}
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return "", false
	}
	buf := make([]byte, int(n[0])+2)
	if _, err := io.ReadFull(c, buf); err != nil {
		return "", false
	}
	host, dport := string(buf[:n[0]]), binary.BigEndian.Uint16(buf[n[0]:])
	if why := p.check(host, dport); why != "" {
		p.refuse("%s", why)
		reply(c, repNotAllowed)
		return "", false
	}
	return host, true
}

// check says why host:dport may not be connected, or "" when it may.
func (p *Proxy) check(host string, dport uint16) string {
	if dport != port {
		return fmt.Sprintf("%s port %d: only port 443 is allowed", wire.Printable(host), dport)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return fmt.Sprintf("%s is an IP address: only host names are allowed", wire.Printable(host))
	}
	if err := policy.CheckHost(host); err != nil {
		return fmt.Sprintf("%q is not a valid host name: it %v", host, err)
	}
	for _, pat := range p.hosts {
		if policy.HostMatches(pat, host) {
			return ""
		}
	}
	return fmt.Sprintf("%s is not among the grant's hosts (%s)", host, strings.Join(p.hosts, ", "))
}

// connect resolves host and dials the first allowed address that answers.
func (p *Proxy) connect(host string) (net.Conn, byte) {
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	testHooks.mu.Lock()
	direct, isDirect := testHooks.dial[host]
	fake, isFake := testHooks.resolve[host]
	lookup, reroute := testHooks.lookup, testHooks.reroute
	testHooks.mu.Unlock()
	if isDirect {
		up, err := d.DialContext(ctx, "tcp", direct.String())
		if err != nil {
			p.refuse("%s: %v", host, err)
			return nil, repRefused
		}
		return up, repOK
	}
	addrs := fake
	if !isFake {
		var err error
		if lookup != nil {
			addrs, err = lookup(host)
		} else {
			addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
		if err != nil {
			p.refuse("%s does not resolve: %v", host, err)
			return nil, repUnreachable
		}
	}
	var allowed []netip.AddrPort
	var refused []string
	for _, a := range addrs {
		if Allowed(a) {
			allowed = append(allowed, netip.AddrPortFrom(a.Unmap(), port))
		} else {
			refused = append(refused, a.String())
		}
	}
	if len(allowed) == 0 {
		p.refuse("%s resolves only to addresses that are not public (%s)", host, strings.Join(refused, ", "))
		return nil, repNotAllowed
	}
	for _, a := range allowed {
		target := a
		if to, ok := reroute[a]; ok {
			target = to
		}
		// By address: nothing is resolved again between the check and
		// the dial.
		up, err := d.DialContext(ctx, "tcp", target.String())
		if err == nil {
			return up, repOK
		}
		p.refuse("%s at %s: %v", host, a, err)
	}
	return nil, repRefused
}

// reply sends a SOCKS5 reply with an empty bound address.
func reply(c net.Conn, rep byte) error {
	_, err := c.Write([]byte{socksVersion, rep, 0, atypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// relay copies both ways until both sides are done. A side that ends its
// writing is half-closed on the other, so a request-response exchange
// finishes cleanly; Close cuts both at once.
func relay(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(b, a)
		closeWrite(b)
	}()
	io.Copy(a, b)
	closeWrite(a)
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
