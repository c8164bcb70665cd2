package egress_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a handler that remembers the requests it saw.
type recorder struct {
	mu   sync.Mutex
	seen []*http.Request
	body []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.seen = append(rec.seen, r)
	rec.body = append(rec.body, string(b))
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok "+r.Method+" "+r.URL.Path)
}

func (rec *recorder) requests() []*http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]*http.Request(nil), rec.seen...)
}

// get sends one GET with the placeholder in the secret's header and in
// another header, and returns the response with its body read.
func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+placeholder)
	req.Header.Set("X-Also", placeholder)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading: %v", url, err)
	}
	return resp, string(b)
}

// TestTheValueGoesOnlyToTheSecretsHosts: the secret host gets the real
// value in the secret's header (and only there), from a connection whose
// certificate the call's CA made for exactly that name; a host that is
// allowed but not the secret's gets the placeholder unchanged, over the
// tool's own TLS to the real server.
func TestTheValueGoesOnlyToTheSecretsHosts(t *testing.T) {
	roots := newPKI(t, "test roots")
	var secretRec, plainRec recorder
	secretSrv := startServer(t, roots.serverCert(t, "secret.boxmaker.test"), &secretRec)
	plainSrv := startServer(t, roots.serverCert(t, "plain.boxmaker.test"), &plainRec)
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": secretSrv, "plain.boxmaker.test": plainSrv}, "secret.boxmaker.test")
	c := r.client(nil)

	resp, body := get(t, c, "https://secret.boxmaker.test/a?b=c")
	if resp.StatusCode != 200 || body != "ok GET /a" || resp.Proto != "HTTP/1.1" {
		t.Fatalf("secret host: %s %s %q (%q)", resp.Proto, resp.Status, body, r.proxy.Refusals())
	}
	seen := secretRec.requests()
	if len(seen) != 1 {
		t.Fatalf("the secret host saw %d requests", len(seen))
	}
	h := seen[0].Header
	if got := h.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+value {
		t.Errorf("the secret host got Authorization %q", got)
	}
	if got := h.Get("X-Also"); got != placeholder {
		t.Errorf("another header was changed: %q", got)
	}
	if got := h.Get("Accept-Encoding"); got != "identity" {
		t.Errorf("the secret host got Accept-Encoding %q, want identity", got)
	}
	if seen[0].Host != "secret.boxmaker.test" || seen[0].URL.RequestURI() != "/a?b=c" {
		t.Errorf("the secret host got %s %s", seen[0].Host, seen[0].URL)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if err := leaf.CheckSignatureFrom(r.callCA); err != nil || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "secret.boxmaker.test" {
		t.Errorf("the tool saw %v for %q from %q: %v", leaf.Subject, leaf.DNSNames, leaf.Issuer, err)
	}

	resp, body = get(t, c, "https://plain.boxmaker.test/p")
	if resp.StatusCode != 200 || body != "ok GET /p" {
		t.Fatalf("plain host: %s %q", resp.Status, body)
	}
	seen = plainRec.requests()
	if len(seen) != 1 || seen[0].Header.Get("Authorization") != "Bearer "+placeholder || seen[0].Header.Get("X-Also") != placeholder {
		t.Fatalf("the plain host got %v", seen)
	}
	// The tool's own request, untouched: Go's client asks for gzip, and
	// the connection is the tool's HTTP/2 with the real server.
	if got := seen[0].Header.Get("Accept-Encoding"); got != "gzip" || seen[0].Proto != "HTTP/2.0" {
		t.Errorf("the plain host got Accept-Encoding %q over %s", got, seen[0].Proto)
	}
	leaf = resp.TLS.PeerCertificates[0]
	if !bytes.Equal(leaf.Raw, plainSrv.TLS.Certificates[0].Certificate[0]) {
		t.Errorf("the tool saw %v, not the server's own certificate", leaf.Subject)
	}
	callOnly := x509.NewCertPool()
	callOnly.AddCert(r.callCA)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "plain.boxmaker.test", Roots: callOnly}); err == nil {
		t.Error("the plain host's certificate verifies against the call's CA")
	}
	if refused := r.proxy.Refusals(); len(refused) != 0 {
		t.Errorf("refusals: %q", refused)
	}
}

// echoBody is what the echo handler sends: the value alone, twice in a
// row, a prefix of it that does not complete, and one at the very end.
var echoBody = "start " + value + " mid " + value + value + " partial " + value[:10] + " x " + value[:5] + value + "\nend " + value

// echoValue writes echoBody cut as mode says, flushing after each piece, and
// the value in two response headers.
func echoValue(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Echo", "Bearer "+value)
	w.Header().Add("X-Echo", value+","+value)
	mode := r.URL.Query().Get("mode")
	if mode == "length" {
		w.Header().Set("Content-Length", strconv.Itoa(len(echoBody)))
		io.WriteString(w, echoBody)
		return
	}
	f := w.(http.Flusher)
	rng := rand.New(rand.NewPCG(uint64(len(mode)), 7))
	for rest := echoBody; rest != ""; {
		n := 1
		if mode == "random" {
			n = 1 + rng.IntN(9)
		}
		n = min(n, len(rest))
		io.WriteString(w, rest[:n])
		f.Flush()
		rest = rest[n:]
	}
}

// TestAnEchoOfTheValueComesBackAsThePlaceholder: in headers and in the
// body, whole, cut into single bytes, and cut at random, so that
// occurrences straddle the proxy's reads.
func TestAnEchoOfTheValueComesBackAsThePlaceholder(t *testing.T) {
	roots := newPKI(t, "test roots")
	srv := startServer(t, roots.serverCert(t, "secret.boxmaker.test"), http.HandlerFunc(echoValue))
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
	c := r.client(nil)
	want := strings.ReplaceAll(echoBody, value, placeholder)
	for _, mode := range []string{"length", "bytes", "random"} {
		resp, body := get(t, c, "https://secret.boxmaker.test/echo?mode="+mode)
		if resp.StatusCode != 200 || body != want {
			t.Errorf("%s: %s %q, want %q", mode, resp.Status, body, want)
		}
		if got := resp.Header.Values("X-Echo"); len(got) != 2 || got[0] != "Bearer "+placeholder || got[1] != placeholder+","+placeholder {
			t.Errorf("%s: X-Echo %q", mode, got)
		}
		var all bytes.Buffer
		resp.Header.Write(&all)
		if strings.Contains(all.String()+body, value) {
			t.Errorf("%s: the value came back", mode)
		}
	}
}

// TestAnUnverifiedHostGetsNothing: a secret host whose certificate does
// not verify against the roots gets no request; the tool gets a 502 that
// says why, and the refusal names the host.
func TestAnUnverifiedHostGetsNothing(t *testing.T) {
	roots, stranger := newPKI(t, "test roots"), newPKI(t, "someone else")
	var rec recorder
	srv := startServer(t, stranger.serverCert(t, "secret.boxmaker.test"), &rec)
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
	resp, body := get(t, r.client(nil), "https://secret.boxmaker.test/x")
	const why = "secret.boxmaker.test: its certificate does not verify (x509: certificate signed by unknown authority"
	if resp.StatusCode != 502 || !strings.Contains(body, why) || !strings.Contains(body, "see docs/runbook.md#secret-host-unverified") {
		t.Errorf("%s %q", resp.Status, body)
	}
	if refused := r.proxy.Refusals(); len(refused) != 1 || !strings.HasPrefix(refused[0], why) {
		t.Errorf("refusals %q", refused)
	}
	if n := len(rec.requests()); n != 0 {
		t.Errorf("the host got %d requests", n)
	}
}

// rawTLS connects to host through the proxy and starts TLS as cfg says.
func (r *rig) rawTLS(t *testing.T, host string, cfg *tls.Config) (*tls.Conn, error) {
	t.Helper()
	c, err := dialSOCKS(context.Background(), r.proxy.Path(), host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tc := tls.Client(c, cfg)
	return tc, tc.Handshake()
}

// TestTheConnectionIsForItsHostOnly: the TLS name, the Host header and the
// protocol must be the connected host's HTTP/1.1.
func TestTheConnectionIsForItsHostOnly(t *testing.T) {
	roots := newPKI(t, "test roots")
	var rec recorder
	cert := roots.serverCert(t, "secret.boxmaker.test", "plain.boxmaker.test")
	srv := startServer(t, cert, &rec)
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv, "plain.boxmaker.test": srv}, "secret.boxmaker.test")

	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"another name", &tls.Config{ServerName: "plain.boxmaker.test", RootCAs: r.trust},
			`secret.boxmaker.test: refused the tool's TLS: the tool's TLS asked for the name "plain.boxmaker.test" on a connection to secret.boxmaker.test`},
		{"no name", &tls.Config{InsecureSkipVerify: true},
			`the tool's TLS asked for the name "" on a connection to secret.boxmaker.test`},
		{"HTTP/2 only", &tls.Config{ServerName: "secret.boxmaker.test", RootCAs: r.trust, NextProtos: []string{"h2"}},
			"secret.boxmaker.test: refused the tool's TLS: tls: client requested unsupported application protocols ([\"h2\"])"},
	} {
		before := len(r.proxy.Refusals())
		if _, err := r.rawTLS(t, "secret.boxmaker.test", tc.cfg); err == nil {
			t.Errorf("%s: the handshake succeeded", tc.name)
		}
		// The tool sees the alert before the proxy has recorded why.
		if refused := r.waitRefusals(before + 1); len(refused) != before+1 || !strings.Contains(refused[before], tc.want) {
			t.Errorf("%s: refusals %q, want %q", tc.name, refused[before:], tc.want)
		}
	}

	for _, tc := range []struct{ name, request, want string }{
		{"another Host", "GET / HTTP/1.1\r\nHost: plain.boxmaker.test\r\n\r\n",
			`secret.boxmaker.test: a request for the host "plain.boxmaker.test" on a connection to secret.boxmaker.test`},
		{"another port", "GET / HTTP/1.1\r\nHost: secret.boxmaker.test:8443\r\n\r\n", `a request for the host "secret.boxmaker.test:8443"`},
		{"an absolute URL elsewhere", "GET https://plain.boxmaker.test/ HTTP/1.1\r\nHost: secret.boxmaker.test\r\n\r\n", `a request for the host "plain.boxmaker.test"`},
		{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: secret.boxmaker.test\r\n\r\n", "a request in HTTP/1.0"},
		{"a WebSocket", "GET / HTTP/1.1\r\nHost: secret.boxmaker.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", `a protocol upgrade (Upgrade: "websocket")`},
		{"a Range", "GET / HTTP/1.1\r\nHost: secret.boxmaker.test\r\nRange: bytes=7-\r\n\r\n", "a request for part of a response (Range)"},
		{"an If-Range", "GET / HTTP/1.1\r\nHost: secret.boxmaker.test\r\nif-range: x\r\n\r\n", "a request for part of a response (If-Range)"},
		{"not HTTP", "\x00\x01SSH-2.0-OpenSSH\r\n\r\n", "the tool sent something that is not an HTTP/1.1 request"},
		{"a huge header", "GET / HTTP/1.1\r\nHost: secret.boxmaker.test\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", "a request header over 64 KiB"},
	} {
		before := len(r.proxy.Refusals())
		conn, err := r.rawTLS(t, "secret.boxmaker.test", &tls.Config{ServerName: "secret.boxmaker.test", RootCAs: r.trust})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		go io.WriteString(conn, tc.request) // a huge header is not read to its end
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		refused := r.proxy.Refusals()
		if resp.StatusCode != 502 || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), "see docs/runbook.md#secret-request-refused") ||
			len(refused) != before+1 || !strings.Contains(refused[before], tc.want) {
			t.Errorf("%s: %s %q, refusals %q; want %q", tc.name, resp.Status, b, refused[before:], tc.want)
		}
	}
	if n := len(rec.requests()); n != 0 {
		t.Errorf("the host got %d requests", n)
	}
}

// TestAnEncodedResponseIsRefused: a host that compresses although asked
// for identity gets its response refused, since the value could hide in
// it.
func TestAnEncodedResponseIsRefused(t *testing.T) {
	roots := newPKI(t, "test roots")
	srv := startServer(t, roots.serverCert(t, "secret.boxmaker.test"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "identity, gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, r.Header.Get("Authorization"))
		zw.Close()
	}))
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
	resp, body := get(t, r.client(nil), "https://secret.boxmaker.test/z")
	const why = "secret.boxmaker.test: the response is encoded (Content-Encoding: gzip), so the secret cannot be taken out of it"
	if resp.StatusCode != 502 || !strings.Contains(body, why) || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("%s %v %q", resp.Status, resp.Header, body)
	}
	if refused := r.proxy.Refusals(); len(refused) != 1 || !strings.HasPrefix(refused[0], why) {
		t.Errorf("refusals %q", refused)
	}
}

// TestOneConnectionCarriesManyRequests: keep-alive on both sides, one
// request at a time, bodies and HEAD included.
func TestOneConnectionCarriesManyRequests(t *testing.T) {
	roots := newPKI(t, "test roots")
	var rec recorder
	srv := startServer(t, roots.serverCert(t, "secret.boxmaker.test"), &rec)
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
	var dials atomic.Int32
	c := r.client(&dials)
	for i, method := range []string{"GET", "POST", "HEAD", "PUT", "GET"} {
		var body io.Reader
		if method == "POST" || method == "PUT" {
			body = strings.NewReader(strings.Repeat("payload "+placeholder+" ", 1000))
		}
		req, _ := http.NewRequest(method, "https://secret.boxmaker.test/n", body)
		req.Header.Set("Authorization", "Bearer "+placeholder)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "ok " + method + " /n"
		if method == "HEAD" {
			want = ""
		}
		if resp.StatusCode != 200 || string(b) != want {
			t.Fatalf("request %d: %s %q", i, resp.Status, b)
		}
	}
	seen := rec.requests()
	if dials.Load() != 1 || srv.conns.Load() != 1 || len(seen) != 5 {
		t.Fatalf("%d dials, %d server connections, %d requests; want 1, 1, 5 (%q)", dials.Load(), srv.conns.Load(), len(seen), r.proxy.Refusals())
	}
	for i, s := range seen {
		if s.Header.Get("Authorization") != "Bearer "+value {
			t.Errorf("request %d: %q", i, s.Header.Get("Authorization"))
		}
	}
	// The body is the tool's, the placeholder in it untouched.
	if rec.body[1] != strings.Repeat("payload "+placeholder+" ", 1000) {
		t.Errorf("the POST body arrived as %d bytes", len(rec.body[1]))
	}
}

// TestCloseEndsTheTerminatingPath: a response in the middle of its body
// and an idle kept-alive connection are cut by Close, and no goroutine of
// the proxy is left.
func TestCloseEndsTheTerminatingPath(t *testing.T) {
	roots := newPKI(t, "test roots")
	release := make(chan struct{})
	defer close(release)
	srv := startServer(t, roots.serverCert(t, "secret.boxmaker.test"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first part "+value)
		w.(http.Flusher).Flush()
		if r.URL.Path == "/hang" {
			<-release
		}
	}))
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
	idle := r.client(nil)
	if resp, body := get(t, idle, "https://secret.boxmaker.test/quick"); body != "first part "+placeholder {
		t.Fatalf("%s %q", resp.Status, body)
	}
	hang := r.client(nil)
	req, _ := http.NewRequest("GET", "https://secret.boxmaker.test/hang", nil)
	resp, err := hang.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len("first part "+placeholder))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first part "+placeholder {
		t.Fatalf("%q %v", buf, err)
	}
	if len(egressGoroutines()) < 3 {
		t.Fatalf("expected the accept loop and two connections, got %q", egressGoroutines())
	}
	if err := r.proxy.Close(); err != nil {
		t.Fatal(err)
	}
	if left := egressGoroutines(); len(left) != 0 {
		t.Fatalf("goroutines left after Close:\n%s", strings.Join(left, "\n\n"))
	}
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("the response survived Close")
	}
}

// TestAHostsClosedIdleConnectionIsRetried: a host that closes a kept-alive
// connection makes the proxy close the tool's, as the host itself would,
// so the tool's client retries on a new one; and an Expect: 100-continue
// is answered at once.
func TestAHostsClosedIdleConnectionIsRetried(t *testing.T) {
	roots := newPKI(t, "test roots")
	var rec recorder
	srv := startServer(t, roots.serverCert(t, "secret.boxmaker.test"), &rec, func(s *http.Server) { s.IdleTimeout = 20 * time.Millisecond })
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
	var dials atomic.Int32
	c := r.client(&dials)
	c.Transport.(*http.Transport).ExpectContinueTimeout = 10 * time.Second
	for i := range 2 {
		if i == 1 {
			time.Sleep(200 * time.Millisecond) // the host's idle timeout passes
		}
		req, _ := http.NewRequest(http.MethodPut, "https://secret.boxmaker.test/r", strings.NewReader("body"))
		req.Header.Set("Expect", "100-continue")
		req.Header.Set("Idempotency-Key", "k") // Go's client retries a PUT only with one
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("body")), nil }
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v (%q)", i, err, r.proxy.Refusals())
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok PUT /r" || time.Since(start) > 5*time.Second {
			t.Fatalf("request %d: %s %q after %v", i, resp.Status, b, time.Since(start))
		}
	}
	if dials.Load() != 2 || srv.conns.Load() != 2 || len(rec.requests()) != 2 || rec.body[1] != "body" {
		t.Errorf("%d dials, %d host connections, %d requests; want 2, 2, 2", dials.Load(), srv.conns.Load(), len(rec.requests()))
	}
	if refused := r.proxy.Refusals(); len(refused) != 0 {
		t.Errorf("refusals %q", refused)
	}
}

// TestTheValueLeavesNoPartOfTheResponseHead: in the status line's reason
// and in a header's name (which the parser recases) too.
func TestTheValueLeavesNoPartOfTheResponseHead(t *testing.T) {
	roots := newPKI(t, "test roots")
	srv := startServer(t, roots.serverCert(t, "secret.boxmaker.test"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		body := "auth was " + r.Header.Get("Authorization")
		buf.WriteString("HTTP/1.1 200 OK " + value + "\r\nX-" + value + ": 1\r\nX-Keep: " + value + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
		buf.Flush()
	}))
	r := newRig(t, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
	resp, body := get(t, r.client(nil), "https://secret.boxmaker.test/head")
	var head bytes.Buffer
	resp.Header.Write(&head)
	if resp.Status != "200 OK "+placeholder || body != "auth was Bearer "+placeholder || resp.Header.Get("X-Keep") != placeholder ||
		strings.Contains(strings.ToLower(head.String()), strings.ToLower(value)) {
		t.Errorf("%q %q\n%s", resp.Status, body, head.String())
	}
}
