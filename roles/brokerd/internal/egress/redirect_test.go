package egress_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"boxmaker/roles/brokerd/internal/egress"
)

// TestARedirectIsPassedOnAndItsTargetChecked: the proxy follows no
// redirect itself. A 302 from a granted host, on the secret's TLS path and
// on the blind relay, reaches the tool with its Location unchanged, and
// the connection the tool opens to follow it is refused by the SOCKS check
// when its target is private, a literal, another host or another port.
func TestARedirectIsPassedOnAndItsTargetChecked(t *testing.T) {
	roots := newPKI(t, "test roots")
	var hits atomic.Int32
	srv := startServer(t, roots.serverCert(t, secretHost, "plain.boxmaker.test"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(http.StatusFound)
	}))
	res := &stubResolver{calls: map[string]int{}, answers: map[string][]netip.Addr{
		"metadata.boxmaker.test": addrs("169.254.169.254"),
		"internal.boxmaker.test": addrs("10.0.0.7", "fd00::7"),
		"mapped.boxmaker.test":   addrs("::ffff:127.0.0.1"),
	}}
	defer egress.SetTestResolver(res.lookup, nil)()
	notPublic := "resolves only to addresses that are not public"
	for _, from := range []string{secretHost, "plain.boxmaker.test"} {
		// A proxy for each, since a proxy keeps its first 16 refusals.
		r := newRig(t, roots, map[string]*server{secretHost: srv, "plain.boxmaker.test": srv}, secretHost)
		for _, tc := range []struct{ to, why string }{
			{"https://127.0.0.1/latest", "127.0.0.1 is an IP address"},
			{"https://169.254.169.254/latest/meta-data/", "169.254.169.254 is an IP address"},
			{"https://[::1]/", "::1 is an IP address"},
			{"https://[::ffff:169.254.169.254]/", "::ffff:169.254.169.254 is an IP address"},
			{"https://2130706433/", "needs at least two labels"},
			{"https://0x7f.0.0.1/", "is an IP address, not a host name"},
			{"https://localhost/", "needs at least two labels"},
			{"https://metadata.boxmaker.test/", notPublic + " (169.254.169.254)"},
			{"https://internal.boxmaker.test/", notPublic + " (10.0.0.7, fd00::7)"},
			{"https://mapped.boxmaker.test/", notPublic + " (::ffff:127.0.0.1)"},
			{"https://internal.boxmaker.test./", "has a label that is not 1 to 63 bytes"},
			{"http://plain.boxmaker.test/", "port 80: only port 443 is allowed"},
			{"https://plain.boxmaker.test:8443/", "port 8443: only port 443 is allowed"},
			{"https://outside.example.org/", "outside.example.org is not among the grant's hosts"},
		} {
			url := "https://" + from + "/r?to=" + tc.to
			before, hitsBefore := len(r.proxy.Refusals()), hits.Load()
			noFollow := r.portClient()
			noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := noFollow.Get(url)
			if err != nil {
				t.Fatalf("%s to %s: %v", from, tc.to, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != tc.to {
				t.Errorf("%s to %s: the tool got %s, Location %q", from, tc.to, resp.Status, resp.Header.Get("Location"))
			}
			if _, err := r.portClient().Get(url); err == nil {
				t.Errorf("%s to %s: the redirect was followed", from, tc.to)
			}
			refused := r.proxy.Refusals()
			if len(refused) != before+1 || !strings.Contains(refused[before], tc.why) {
				t.Errorf("%s to %s: refusals %q, want %q", from, tc.to, refused[before:], tc.why)
			}
			if n := hits.Load() - hitsBefore; n != 2 {
				t.Errorf("%s to %s: the host got %d requests, want 2", from, tc.to, n)
			}
		}
	}
}

// portClient is rig.client with the port of each dial asked for as it is,
// as the toolkit's client asks (rig.client always asks for 443).
func (r *rig) portClient() *http.Client {
	c := r.client(nil)
	c.Transport.(*http.Transport).DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", r.proxy.Path())
		if err != nil {
			return nil, err
		}
		req := append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}, host...)
		req = binary.BigEndian.AppendUint16(req, uint16(port))
		var rep [12]byte
		if _, err := conn.Write(req); err != nil {
			conn.Close()
			return nil, err
		}
		if _, err := io.ReadFull(conn, rep[:]); err != nil || rep[3] != 0 {
			conn.Close()
			return nil, fmt.Errorf("SOCKS5 reply %d (%v)", rep[3], err)
		}
		return conn, nil
	}
	return c
}
