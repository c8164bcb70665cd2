package egress_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// naiveHost is a host that gets the secret, with the laxest HTTP/1.1
// parser the request-smuggling literature describes, so that the tests see
// what any host might make of the bytes the proxy sends: a header name's
// '_' read as '-' (CGI, WSGI and Rack map both to the same variable), the
// last of repeated Host and Content-Length headers winning, any
// Transfer-Encoding that mentions chunked meaning chunked, and trailers
// merged into the headers (Apache's MergeTrailers). It records every
// request it parsed and the raw bytes of every connection, and answers
// each request with "ok".
type naiveHost struct {
	addr netip.AddrPort
	mu   sync.Mutex
	seen []naiveRequest
	raw  [][]byte // one per connection, complete once it ended
	wg   sync.WaitGroup
}

// naiveRequest is one request as the naive host understood it.
type naiveRequest struct {
	method, target, host string
	header               map[string][]string // names lowercased, '_' as '-'
	body                 string
}

func startNaiveHost(t *testing.T, cert tls.Certificate) *naiveHost {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &naiveHost{addr: netip.MustParseAddrPort(ln.Addr().String())}
	acceptAll(t, ln, &h.wg, h.serve)
	return h
}

func (h *naiveHost) serve(c net.Conn) {
	defer c.Close()
	var raw bytes.Buffer
	defer func() {
		h.mu.Lock()
		h.raw = append(h.raw, raw.Bytes())
		h.mu.Unlock()
	}()
	r := bufio.NewReader(io.TeeReader(c, &raw))
	for {
		req, ok := naiveRead(r)
		if !ok {
			return
		}
		h.mu.Lock()
		h.seen = append(h.seen, req)
		h.mu.Unlock()
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

// naiveLine reads a line ended by LF, with any CR before it dropped.
func naiveLine(r *bufio.Reader) (string, bool) {
	l, err := r.ReadString('\n')
	return strings.TrimRight(l, "\r\n"), err == nil
}

// naiveFields reads header lines up to an empty one into h; a line that
// starts with a space or tab continues the one before (obs-fold).
func naiveFields(r *bufio.Reader, h map[string][]string) bool {
	last := ""
	for {
		l, ok := naiveLine(r)
		if !ok {
			return false
		}
		if l == "" {
			return true
		}
		if (l[0] == ' ' || l[0] == '\t') && last != "" {
			vs := h[last]
			vs[len(vs)-1] += " " + strings.TrimSpace(l)
			continue
		}
		name, v, _ := strings.Cut(l, ":")
		last = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
		h[last] = append(h[last], strings.TrimSpace(v))
	}
}

func naiveRead(r *bufio.Reader) (naiveRequest, bool) {
	line, ok := naiveLine(r)
	for ok && line == "" {
		line, ok = naiveLine(r)
	}
	parts := strings.Fields(line)
	if !ok || len(parts) < 2 {
		return naiveRequest{}, false
	}
	req := naiveRequest{method: parts[0], target: parts[1], header: map[string][]string{}}
	if !naiveFields(r, req.header) {
		return naiveRequest{}, false
	}
	var body bytes.Buffer
	switch {
	case strings.Contains(strings.ToLower(strings.Join(req.header["transfer-encoding"], ",")), "chunked"):
		for {
			l, ok := naiveLine(r)
			size, err := strconv.ParseInt(strings.TrimSpace(strings.Split(l, ";")[0]), 16, 64)
			if !ok || err != nil || size < 0 || size > 1<<20 {
				return naiveRequest{}, false
			}
			if size == 0 {
				break
			}
			if _, err := io.CopyN(&body, r, size); err != nil {
				return naiveRequest{}, false
			}
			if _, ok := naiveLine(r); !ok {
				return naiveRequest{}, false
			}
		}
		if !naiveFields(r, req.header) { // trailers, merged
			return naiveRequest{}, false
		}
	case len(req.header["content-length"]) > 0:
		cls := req.header["content-length"]
		n, err := strconv.ParseInt(cls[len(cls)-1], 10, 64)
		if err != nil || n < 0 || n > 1<<20 {
			return naiveRequest{}, false
		}
		if _, err := io.CopyN(&body, r, n); err != nil {
			return naiveRequest{}, false
		}
	}
	req.body = body.String()
	if hs := req.header["host"]; len(hs) > 0 {
		req.host = hs[len(hs)-1]
	}
	return req, true
}

// requests is what the host parsed so far.
func (h *naiveHost) requests() []naiveRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]naiveRequest(nil), h.seen...)
}

// connections is the raw bytes of every connection that has ended.
func (h *naiveHost) connections() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.raw...)
}

// reset forgets what the host saw.
func (h *naiveHost) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen, h.raw = nil, nil
}

// acceptAll serves each connection of ln on its own goroutine, counted in
// wg, until the test ends; then it closes ln and waits for them all.
func acceptAll(t testing.TB, ln net.Listener, wg *sync.WaitGroup, serve func(net.Conn)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
}
