package egress

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/netip"
)

// SetTestHosts is the test-only hook (see testHooks): names in dial go
// straight to a local address, names in resolve get these answers instead
// of DNS's. It returns a function that removes them.
func SetTestHosts(dial map[string]netip.AddrPort, resolve map[string][]netip.Addr) (restore func()) {
	testHooks.mu.Lock()
	defer testHooks.mu.Unlock()
	testHooks.dial, testHooks.resolve = dial, resolve
	return func() {
		testHooks.mu.Lock()
		defer testHooks.mu.Unlock()
		testHooks.dial, testHooks.resolve = nil, nil
	}
}

// SetTestRoots is the test-only hook for the roots the proxy verifies a
// secret host's certificate against (the system's when nil). It returns a
// function that removes them.
func SetTestRoots(roots *x509.CertPool) (restore func()) {
	testHooks.mu.Lock()
	defer testHooks.mu.Unlock()
	testHooks.roots = roots
	return func() {
		testHooks.mu.Lock()
		defer testHooks.mu.Unlock()
		testHooks.roots = nil
	}
}

// SetTestResolver is the test-only hook for a resolver that answers a
// lookup at a time (a name that changes its answer), and for sending an
// address the proxy checked to a local stand-in. It returns a function
// that removes both.
func SetTestResolver(lookup func(host string) ([]netip.Addr, error), reroute map[netip.AddrPort]netip.AddrPort) (restore func()) {
	testHooks.mu.Lock()
	defer testHooks.mu.Unlock()
	testHooks.lookup, testHooks.reroute = lookup, reroute
	return func() {
		testHooks.mu.Lock()
		defer testHooks.mu.Unlock()
		testHooks.lookup, testHooks.reroute = nil, nil
	}
}

// MaxConns is how many tool connections a proxy holds open at once.
const MaxConns = maxConns

// CheckAndPrepare is what the secret's TLS path does to one request the
// tool sent to host before writing it: check it, and make it what the
// host gets. It returns the refusal, or "". p must hold a secret.
func CheckAndPrepare(p *Proxy, host string, req *http.Request) string {
	x := &exchange{p: p, host: host}
	if why := x.check(req); why != "" {
		return why
	}
	p.secret.prepare(req, host)
	return ""
}

// Replacer is the body's replacer, as the secret's TLS path makes one.
type Replacer interface {
	Write(p []byte) (int, error)
	Flush() error
}

// NewReplacer is the replacer the secret's TLS path puts on a response
// body: every occurrence of old in what is written to it goes to w as new.
func NewReplacer(w io.Writer, old, new []byte) Replacer {
	return testReplacer(w, old, new)
}
