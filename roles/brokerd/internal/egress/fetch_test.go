package egress_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/egress"
	"boxmaker/roles/brokerd/internal/podman"
	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

func TestMain(m *testing.M) {
	defer podmantest.Stop()
	m.Run()
}

// TestHTTPFetchInAContainer runs http_fetch end to end: the decision, the
// tool container with no network, the toolkit's HTTPS GET through this
// call's proxy, and the proxy's checks. fetch.boxmaker.test is sent to a
// local HTTPS server (the test-only hook); the image trusts its test CA.
func TestHTTPFetchInAContainer(t *testing.T) {
	socket := podmantest.Socket(t)
	var hits atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: podmantest.ServerTLS(t), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/hello":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "hello from %s", r.Host)
		case "/to-outside":
			http.Redirect(w, r, "https://outside.example.org/x", http.StatusFound)
		case "/to-ip":
			http.Redirect(w, r, "https://93.184.216.34/x", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "https://private.boxmaker.test/x", http.StatusFound)
		case "/to-other":
			http.Redirect(w, r, "https://fetch.boxmaker.test/hello", http.StatusFound)
		}
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); <-done })
	restore := egress.SetTestHosts(
		map[string]netip.AddrPort{"fetch.boxmaker.test": netip.MustParseAddrPort(ln.Addr().String())},
		map[string][]netip.Addr{
			"private.boxmaker.test": {netip.MustParseAddr("192.168.1.10")},
			// IPv6 forms that carry the host's own loopback address.
			"compat.boxmaker.test": {netip.MustParseAddr("::127.0.0.1")},
			"siit.boxmaker.test":   {netip.MustParseAddr("::ffff:0:127.0.0.1")},
		})
	defer restore()

	cfg := podman.DefaultConfig()
	cfg.Socket, cfg.Image, cfg.TimeoutMS = socket, podmantest.Image(t, socket), 15_000
	rt, err := podman.New(context.Background(), cfg, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	grants := t.TempDir()
	g := "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\nhosts = [\"*.boxmaker.test\"]\n"
	if err := os.WriteFile(filepath.Join(grants, "fetch.toml"), []byte(g), 0o600); err != nil {
		t.Fatal(err)
	}
	fetch := func(url string) (wire.ToolResponse, policy.Decision) {
		sid, _ := wire.NewSessionID("s-1")
		d := policy.Decide(grants, wire.ToolRequest{Session: sid, Call: 1, Tool: "http_fetch", Arguments: `{"url":"` + url + `"}`},
			policy.State{Taint: wire.Private}, wire.Now())
		res, err := runner.Run(context.Background(), d, rt)
		if err != nil {
			return nil, d
		}
		return res.Response, d
	}

	resp, _ := fetch("https://fetch.boxmaker.test/hello")
	if r, ok := resp.(wire.ResultResponse); !ok || r.Content != "HTTP 200 OK\nContent-Type: text/plain\n\nhello from fetch.boxmaker.test" {
		t.Fatalf("the allowed host: %#v", resp)
	}
	if resp, _ := fetch("https://fetch.boxmaker.test/to-other"); !strings.HasPrefix(fmt.Sprint(resp), "{HTTP 200 OK\nURL: https://fetch.boxmaker.test/hello\n") {
		t.Errorf("a redirect inside the grant: %#v", resp)
	}
	for _, tc := range []struct{ url, want string }{
		{"https://fetch.boxmaker.test/to-outside", "outside.example.org is not among the grant's hosts (*.boxmaker.test)"},
		{"https://fetch.boxmaker.test/to-ip", "93.184.216.34 is an IP address: only host names are allowed"},
		{"https://fetch.boxmaker.test/to-private", "private.boxmaker.test resolves only to addresses that are not public (192.168.1.10)"},
		{"https://private.boxmaker.test/x", "private.boxmaker.test resolves only to addresses that are not public"},
		{"https://compat.boxmaker.test/x", "compat.boxmaker.test resolves only to addresses that are not public (::7f00:1)"},
		{"https://siit.boxmaker.test/x", "siit.boxmaker.test resolves only to addresses that are not public (::ffff:0:7f00:1)"},
	} {
		resp, _ := fetch(tc.url)
		f, ok := resp.(wire.FailedResponse)
		if !ok || !strings.Contains(f.Message, "the egress proxy refused it") || !strings.Contains(f.Message, tc.want) {
			t.Errorf("%s: %#v", tc.url, resp)
		}
	}
	// Refused before any container: another host, and an IP literal, are
	// not covered by the grant or not valid at all.
	for url, reason := range map[string]wire.DenyReason{
		"https://outside.example.org/x": wire.NoGrant,
		"https://127.0.0.1/x":           wire.InvalidArguments,
		"http://fetch.boxmaker.test/":   wire.InvalidArguments,
	} {
		if resp, d := fetch(url); resp != nil || d.Reason() != reason {
			t.Errorf("%s: %#v %v", url, resp, d.Outcome())
		}
	}
	if n := hits.Load(); n != 6 {
		t.Errorf("the server saw %d requests, want 6", n)
	}
}
