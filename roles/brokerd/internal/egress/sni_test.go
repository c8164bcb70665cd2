package egress_test

import (
	"bufio"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// The blind relay's TLS (issue 29): a host reached through a shared front
// (a CDN) serves many names on one address, and picks the one a
// connection is for by the name in its ClientHello. A tool that connects
// to a granted name and then asks, in its TLS, for another, reaches that
// other site. The proxy reads the tool's first ClientHello and lets it on
// only when it names, in the clear, exactly the host the tool connected to.

// frontHost is the shared front: one server for the granted name and for
// otherSite, with ECH keys so that a ClientHello can hide the name it
// wants. It records the name and Host of every request it serves.
type frontHost struct {
	*server
	mu   sync.Mutex
	seen []string // "<TLS name> <Host>"
}

const otherSite = "other.example.org"

func startFront(t *testing.T, roots *pki, names []string, echKeys []tls.EncryptedClientHelloKey, curves ...tls.CurveID) *frontHost {
	t.Helper()
	f := &frontHost{}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.TLS.ServerName+" "+r.Host)
		f.mu.Unlock()
		io.WriteString(w, "site "+r.TLS.ServerName)
	}))
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{roots.serverCert(t, names...)}, EncryptedClientHelloKeys: echKeys,
		CurvePreferences: curves}
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	hs.StartTLS()
	t.Cleanup(hs.Close)
	f.server = &server{Server: hs, addr: netip.MustParseAddrPort(hs.Listener.Addr().String())}
	return f
}

func (f *frontHost) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// echConfig makes an ECH configuration (draft-ietf-tls-esni, DHKEM X25519,
// HKDF-SHA256, AES-128-GCM) whose public name is publicName: the name a
// client shows in the clear while the one it wants goes encrypted.
func echConfig(t *testing.T, publicName string) (list []byte, key tls.EncryptedClientHelloKey) {
	t.Helper()
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u16 := func(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
	pub := priv.PublicKey().Bytes()
	var c []byte
	c = append(c, 7)   // config_id
	c = u16(c, 0x0020) // DHKEM(X25519, HKDF-SHA256)
	c = append(u16(c, len(pub)), pub...)
	c = u16(c, 4)         // one cipher suite:
	c = u16(u16(c, 1), 1) // HKDF-SHA256, AES-128-GCM
	c = append(c, 0)      // maximum_name_length
	c = append(append(c, byte(len(publicName))), publicName...)
	c = u16(c, 0) // no extensions
	config := append(u16(u16(nil, 0xfe0d), len(c)), c...)
	return append(u16(nil, len(config)), config...), tls.EncryptedClientHelloKey{Config: config, PrivateKey: priv.Bytes()}
}

// TestTheRelayedTLSNamesTheConnectedHost plays each ClientHello a tool can
// send on a connection to a granted host that does not get the secret.
func TestTheRelayedTLSNamesTheConnectedHost(t *testing.T) {
	roots := newPKI(t, "test roots")
	const granted = "plain.boxmaker.test"
	echList, echKey := echConfig(t, granted)
	front := startFront(t, roots, []string{granted, otherSite}, []tls.EncryptedClientHelloKey{echKey})
	// A host that knows only P-256 answers Go's first key shares with a
	// HelloRetryRequest: the second ClientHello must go through too.
	hrr := startFront(t, roots, []string{"hrr.boxmaker.test"}, nil, tls.CurveP256)
	r := newRig(t, roots, map[string]*server{granted: front.server, "hrr.boxmaker.test": hrr.server}, secretHost)
	tool := func(name string) *tls.Config {
		return &tls.Config{ServerName: name, RootCAs: roots.pool, NextProtos: []string{"http/1.1"}}
	}
	noName := &tls.Config{InsecureSkipVerify: true}
	withECH := tool(otherSite)
	withECH.EncryptedClientHelloConfigList = echList
	withECH.MinVersion = tls.VersionTLS13
	const see = "see docs/runbook.md#egress-tls-refused"
	for _, tc := range []struct {
		name, host string
		cfg        *tls.Config // nil: raw is sent instead of TLS
		raw        string
		want       string // "" when the host must serve it
	}{
		{"the connected name", granted, tool(granted), "", ""},
		{"the name in capitals", granted, tool("PLAIN.Boxmaker.Test"), "", ""},
		{"after a HelloRetryRequest", "hrr.boxmaker.test", tool("hrr.boxmaker.test"), "", ""},
		{"another site on the front", granted, tool(otherSite), "",
			`plain.boxmaker.test: the tool's TLS asked for the name "other.example.org"; ` + see},
		{"no name", granted, noName, "", `plain.boxmaker.test: the tool's TLS asked for no name; ` + see},
		{"another name, hidden by ECH", granted, withECH, "", "plain.boxmaker.test: the tool's TLS hid the name it asked for (Encrypted Client Hello); " + see},
		{"HTTP in the clear", granted, nil, "GET / HTTP/1.1\r\nHost: " + otherSite + "\r\n\r\n", "plain.boxmaker.test: the tool sent something that is not a TLS ClientHello; " + see},
		{"h2c prior knowledge", granted, nil, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "plain.boxmaker.test: the tool sent something that is not a TLS ClientHello; " + see},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, served := len(r.proxy.Refusals()), len(front.requests())+len(hrr.requests())
			c, err := dialSOCKS(context.Background(), r.proxy.Path(), tc.host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			var body string
			if tc.cfg == nil {
				io.WriteString(c, tc.raw)
				b, _ := io.ReadAll(c)
				body = string(b)
			} else if tc2 := tls.Client(c, tc.cfg); tc2.Handshake() == nil {
				io.WriteString(tc2, "GET / HTTP/1.1\r\nHost: "+tc.cfg.ServerName+"\r\nConnection: close\r\n\r\n")
				if resp, err := http.ReadResponse(bufio.NewReader(tc2), nil); err == nil {
					b, _ := io.ReadAll(resp.Body)
					body = string(b)
				}
			}
			if tc.want == "" {
				refused := r.proxy.Refusals()
				if !strings.EqualFold(body, "site "+tc.cfg.ServerName) || len(refused) != before {
					t.Errorf("got %q, refusals %q", body, refused[before:])
				}
				return
			}
			refused := r.waitRefusals(before + 1)
			if len(refused) != before+1 || refused[before] != tc.want {
				t.Errorf("got %q, refusals %q; want %q", body, refused[before:], tc.want)
			}
			if n := len(front.requests()) + len(hrr.requests()) - served; n != 0 || body != "" {
				t.Errorf("the front served %d requests (%q), the tool got %q", n, front.requests(), body)
			}
		})
	}
}

// clientHello is the first flight of Go's TLS client for name: what a
// tool sends first on a relayed connection, for tests whose host is not
// TLS at all.
func clientHello(t *testing.T, name string) []byte {
	t.Helper()
	tool, proxy := net.Pipe()
	defer proxy.Close()
	go tls.Client(tool, &tls.Config{ServerName: name}).Handshake()
	defer tool.Close()
	var head [5]byte
	if _, err := io.ReadFull(proxy, head[:]); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 5+int(binary.BigEndian.Uint16(head[3:])))
	copy(rec, head[:])
	if _, err := io.ReadFull(proxy, rec[5:]); err != nil {
		t.Fatal(err)
	}
	return rec
}
