package egress_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/egress"
)

// The scaffolding of the TLS path's tests: a test CA standing in for the
// public roots, local HTTPS servers under test host names, and an HTTP
// client that goes through the proxy's socket the way the toolkit's does.

const (
	value       = "sk-live-Zq8pV3xT9wLm2cRf"
	placeholder = "BOXMAKER-PLACEHOLDER-4f1d0c9a7b3e"
)

// pki is a CA and the certificates it signs.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newPKI(t testing.TB, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &pki{cert: cert, key: key, pool: pool}
}

func (k *pki) serverCert(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: k.cert.NotBefore, NotAfter: k.cert.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, k.cert, &key.PublicKey, k.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// server is a local HTTPS server that counts its connections.
type server struct {
	*httptest.Server
	addr  netip.AddrPort
	conns atomic.Int32
}

func startServer(t testing.TB, cert tls.Certificate, h http.Handler, tune ...func(*http.Server)) *server {
	t.Helper()
	s := &server{Server: httptest.NewUnstartedServer(h)}
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes the proxy's refusals cut short
	s.EnableHTTP2 = true                           // as a real host would
	for _, f := range tune {
		f(s.Config)
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	s.addr = netip.MustParseAddrPort(s.Listener.Addr().String())
	return s
}

// rig is one test's world: the upstream roots, the hooks that send test
// names to local servers, and a proxy with the secret.
type rig struct {
	roots  *pki
	proxy  *egress.Proxy
	trust  *x509.CertPool // what the tool trusts: the roots and the call's CA
	callCA *x509.Certificate
}

// newRig sends each name of servers to its server, trusts roots upstream,
// and starts a proxy for *.boxmaker.test whose secret goes to secretHosts.
func newRig(t testing.TB, roots *pki, servers map[string]*server, secretHosts ...string) *rig {
	t.Helper()
	dial := map[string]netip.AddrPort{}
	for name, s := range servers {
		dial[name] = s.addr
	}
	t.Cleanup(egress.SetTestHosts(dial, nil))
	t.Cleanup(egress.SetTestRoots(roots.pool))
	return startRigProxy(t, roots, []byte(value), secretHosts...)
}

// startRigProxy starts a proxy for *.boxmaker.test whose secret, value,
// goes to secretHosts, under the hooks newRig (or its caller) set; Cleanup
// closes it.
func startRigProxy(t testing.TB, roots *pki, value []byte, secretHosts ...string) *rig {
	t.Helper()
	p, err := egress.StartWith(t.TempDir(), []string{"*.boxmaker.test"}, &egress.Secret{
		Name: "api-key", Header: "Authorization", Placeholder: placeholder, Value: value, Hosts: secretHosts,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	pemBytes, err := os.ReadFile(p.CAPath())
	if err != nil {
		t.Fatal(err)
	}
	trust := roots.pool.Clone()
	if !trust.AppendCertsFromPEM(pemBytes) {
		t.Fatal("the CA file holds no certificate")
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatal("the CA file holds no PEM")
	}
	callCA, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{roots: roots, proxy: p, trust: trust, callCA: callCA}
}

// client is an HTTP client like the toolkit's http_fetch: every dial goes
// to the proxy's socket as a SOCKS5 CONNECT by name, HTTP/2 is offered,
// and it trusts the rig's roots and the call's CA. dials counts the
// connections it makes.
func (r *rig) client(dials *atomic.Int32) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			if dials != nil {
				dials.Add(1)
			}
			host, _, _ := net.SplitHostPort(addr)
			return dialSOCKS(ctx, r.proxy.Path(), host)
		},
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: r.trust},
		ForceAttemptHTTP2: true,
	}}
}

// dialSOCKS is the toolkit's SOCKS5 CONNECT, without its messages.
func dialSOCKS(ctx context.Context, path, host string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	req := append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}, host...)
	req = binary.BigEndian.AppendUint16(req, 443)
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, err
	}
	var rep [12]byte // greeting, then the reply with an IPv4 bound address
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		c.Close()
		return nil, err
	}
	if rep[1] != 0 || rep[3] != 0 {
		c.Close()
		return nil, fmt.Errorf("SOCKS5 reply %d", rep[3])
	}
	return c, nil
}

// egressGoroutines lists the goroutines running the proxy's code.
func egressGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/egress.(*Proxy)") || strings.Contains(g, "internal/egress.(*exchange)") {
			out = append(out, g)
		}
	}
	return out
}

// waitRefusals waits up to a few seconds for n refusals, and returns
// them.
func (r *rig) waitRefusals(n int) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		refused := r.proxy.Refusals()
		if len(refused) >= n || time.Now().After(deadline) {
			return refused
		}
		time.Sleep(time.Millisecond)
	}
}
