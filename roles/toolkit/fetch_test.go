package toolkit

import (
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeSOCKS is a SOCKS5 server on a Unix socket that connects every
// allowed name to target and refuses the others with code 2. It records
// the requests it saw.
type fakeSOCKS struct {
	path    string
	target  string
	allowed map[string]bool
	mu      sync.Mutex
	seen    []string
}

func startSOCKS(t *testing.T, target string, allowed ...string) *fakeSOCKS {
	t.Helper()
	s := &fakeSOCKS{path: filepath.Join(t.TempDir(), "s"), target: target, allowed: map[string]bool{}}
	for _, a := range allowed {
		s.allowed[a] = true
	}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(c) }()
		}
	}()
	return s
}

func (s *fakeSOCKS) serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 512)
	if _, err := io.ReadFull(c, buf[:3]); err != nil {
		return
	}
	c.Write([]byte{5, 0})
	if _, err := io.ReadFull(c, buf[:5]); err != nil || buf[3] != socksAtypName {
		return
	}
	n := int(buf[4])
	if _, err := io.ReadFull(c, buf[:n+2]); err != nil {
		return
	}
	name := string(buf[:n])
	port := binary.BigEndian.Uint16(buf[n:])
	s.mu.Lock()
	s.seen = append(s.seen, name)
	s.mu.Unlock()
	if !s.allowed[name] || port != 443 {
		c.Write([]byte{5, 2, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	up, err := net.Dial("tcp", s.target)
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	go io.Copy(up, c)
	io.Copy(c, up)
}

func TestHTTPFetchThroughSOCKS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello from "+r.Host)
		case "/away":
			http.Redirect(w, r, "https://other.test/x", http.StatusFound)
		case "/plain":
			http.Redirect(w, r, "http://allowed.test/hello", http.StatusFound)
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2})
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	t.Cleanup(srv.Close)
	testRoots = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	t.Cleanup(func() { testRoots = nil })
	// httptest's certificate is for example.com and its subdomains.
	proxy := startSOCKS(t, srv.Listener.Addr().String(), "a.example.com")
	for _, tc := range []struct {
		url, status, prefix string
	}{
		{"https://a.example.com/hello", "result", "HTTP 200 OK\nContent-Type: text/plain\n\nhello from a.example.com"},
		{"https://a.example.com/bin", "result", "HTTP 200 OK\nContent-Type: application/octet-stream\n\nbinary content, 3 bytes, not shown"},
		{"https://b.example.com/hello", "failed", "http_fetch: b.example.com:443: the egress proxy refused it: the host is not allowed"},
		{"https://a.example.com/away", "failed", "http_fetch: other.test:443: the egress proxy refused it"},
		{"https://a.example.com/plain", "failed", "http_fetch: refused a redirect to http://allowed.test/hello"},
		{"https://a.example.com/loop", "failed", "http_fetch: stopped after 5 redirects"},
	} {
		res, _ := call(t, Request{Tool: "http_fetch", URL: str(tc.url), Proxy: str(proxy.path), OutputBytes: 1000})
		if got := res.Head + res.Text + res.Tail; res.Status != tc.status || !strings.HasPrefix(got, tc.prefix) {
			t.Errorf("%s: %+v", tc.url, res)
		}
	}
	res, _ := call(t, Request{Tool: "http_fetch", URL: str("https://a.example.com/hello"), Proxy: str(proxy.path), OutputBytes: 5})
	if res.Status != "result" || res.Text != "hello" || !strings.HasSuffix(res.Head, "\n\n") {
		t.Errorf("capped: %+v", res)
	}
	res, _ = call(t, Request{Tool: "http_fetch", URL: str("https://a.example.com/hello"), Proxy: str(filepath.Join(t.TempDir(), "none")), OutputBytes: 5})
	if res.Status != "failed" || !strings.Contains(res.Text, "the egress proxy is not reachable") {
		t.Errorf("no proxy: %+v", res)
	}
}
