package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"boxmaker/runbook"
)

// The TLS-terminating path, for a host that gets the call's secret
// (docs/decisions.md, "The secret's TLS path"). The tool's TLS ends here,
// with a certificate from the call's own CA; each HTTP/1.1 request is read,
// the placeholder in the secret's header becomes the value, and the
// request goes on over the proxy's own TLS connection to the real host,
// verified against the system's roots. Responses come back with every
// occurrence of the value turned back into the placeholder. One request at
// a time, in the connection's own goroutine: nothing here starts another.

// maxHeaderBytes bounds a request's or a response's header block.
const maxHeaderBytes = 64 << 10

// hopByHop are the headers of one connection (RFC 9110 §7.6.1); the
// proxy's two connections each have their own.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// terminate serves the tool's connection c to host, which gets the secret;
// up is the TCP connection connect dialled to it.
func (p *Proxy) terminate(c, up net.Conn, host string) {
	tc := tls.Server(c, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		// No resumption: every connection's handshake goes through
		// GetCertificate, and so through the name check.
		SessionTicketsDisabled: true,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if strings.ToLower(hello.ServerName) != host {
				return nil, fmt.Errorf("the tool's TLS asked for the name %q on a connection to %s", hello.ServerName, host)
			}
			return p.ca.leaf(host)
		},
	})
	defer tc.Close()
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		if !quiet(p, err) {
			p.refuse("%s: refused the tool's TLS: %v; %s", host, err, runbook.See("secret-request-refused"))
		}
		return
	}
	c.SetDeadline(time.Time{})
	cl := &limitReader{r: tc, n: -1}
	ul := &limitReader{r: nil, n: -1}
	x := &exchange{p: p, host: host, rawUp: up, cl: cl, ul: ul,
		cr: bufio.NewReader(cl), cw: bufio.NewWriter(tc)}
	x.run()
}

// exchange is one tool connection's state on the terminating path.
type exchange struct {
	p      *Proxy
	host   string
	rawUp  net.Conn
	cl, ul *limitReader // under cr and ur: bound each header block
	cr     *bufio.Reader
	cw     *bufio.Writer
	up     *tls.Conn // nil until the first request
	ur     *bufio.Reader
	uw     *bufio.Writer
	buf    []byte // a response body's reads, made once per connection
}

// run carries requests until either side ends the connection or a request
// or response is refused.
func (x *exchange) run() {
	for {
		x.cl.n = maxHeaderBytes
		req, err := http.ReadRequest(x.cr)
		x.cl.n = -1
		switch {
		case err == nil:
		case x.cl.hit:
			x.refused("a request header over %d KiB", maxHeaderBytes>>10)
			return
		case quiet(x.p, err):
			return
		default:
			x.refused("the tool sent something that is not an HTTP/1.1 request (%v)", err)
			return
		}
		if why := x.check(req); why != "" {
			x.refused("%s", why)
			return
		}
		fresh := x.up == nil
		if fresh && !x.dial() {
			return
		}
		// Only a kept-alive connection can have gone stale; a fresh one
		// may well have bytes waiting (a TLS 1.3 session ticket sent just
		// after the handshake), and closing it would fail a request the
		// tool's client does not retry.
		if !fresh && x.hostHungUp() {
			// Before anything is answered: the tool's client sees the
			// connection close as the host's own, and retries on a new one.
			return
		}
		if !x.forward(req) {
			return
		}
	}
}

// check says why req may not go to the host, or "".
func (x *exchange) check(req *http.Request) string {
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 {
		return fmt.Sprintf("a request in %s: only HTTP/1.1 goes to a host that gets a secret", req.Proto)
	}
	if req.Method == http.MethodConnect {
		return "a CONNECT request inside the connection"
	}
	if h := authority(req.Host); h != x.host {
		return fmt.Sprintf("a request for the host %q on a connection to %s", req.Host, x.host)
	}
	if req.URL.Host != "" && authority(req.URL.Host) != x.host {
		return fmt.Sprintf("a request for %q on a connection to %s", req.URL.Host, x.host)
	}
	if u := req.Header.Get("Upgrade"); u != "" {
		return fmt.Sprintf("a protocol upgrade (Upgrade: %q): only HTTP/1.1 goes to a host that gets a secret", u)
	}
	// A part of a response can cut an echo of the value so that no
	// rewrite finds it (issue 15's review); http_fetch never asks for one.
	for _, h := range []string{"Range", "If-Range"} {
		if _, ok := req.Header[h]; ok {
			return fmt.Sprintf("a request for part of a response (%s): a host that gets a secret answers whole responses only", h)
		}
	}
	return checkForm(req)
}

// authority is a Host header's name, lowercased, with an explicit :443
// dropped; any other port leaves it unequal to every allowed name.
func authority(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, ":443"))
}

// dial starts TLS to the real host over the connection connect made,
// verified against the system's roots (testHooks.roots in tests).
func (x *exchange) dial() bool {
	testHooks.mu.Lock()
	roots := testHooks.roots
	testHooks.mu.Unlock()
	up := tls.Client(x.rawUp, &tls.Config{
		ServerName: x.host,
		RootCAs:    roots,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		// Resumption, within the call only: a host's later connections
		// skip the full handshake (the cache is keyed by the host name).
		ClientSessionCache: x.p.upSessions,
	})
	ctx, cancel := context.WithTimeout(x.p.ctx, dialTimeout)
	defer cancel()
	if err := up.HandshakeContext(ctx); err != nil {
		var verr *tls.CertificateVerificationError
		if errors.As(err, &verr) {
			x.fail("%s: its certificate does not verify (%v); nothing was sent to it; %s", x.host, verr.Err, runbook.See("secret-host-unverified"))
		} else {
			x.fail("%s: the TLS handshake with it failed (%v); nothing was sent to it; %s", x.host, err, runbook.See("secret-request-refused"))
		}
		return false
	}
	x.up = up
	x.ul.r = up
	x.ur, x.uw = bufio.NewReader(x.ul), bufio.NewWriter(up)
	return true
}

// hostHungUp reports whether the host closed its side of a kept-alive
// connection, or sent something unasked, while the connection was idle: a
// peek at its socket, which does not wait (the TLS layer cannot be asked
// without reading). A request sent on such a connection would fail after
// an Expect: 100-continue was answered, too late for the tool to retry.
func (x *exchange) hostHungUp() bool {
	if x.ur.Buffered() > 0 {
		return true
	}
	sc, ok := x.rawUp.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var rerr error
	var b [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		_, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait
	}); err != nil {
		return true
	}
	if rerr == syscall.EAGAIN || rerr == syscall.EINTR {
		return false
	}
	return true // 0 (end of stream), bytes (an alert, or anything else), or an error
}

// forward sends req on with the secret put in, and writes the response
// back with the secret taken out. It reports whether the connection
// carries another request.
func (x *exchange) forward(req *http.Request) bool {
	if x.p.secret.prepare(req, x.host) {
		// Answered here, so that the tool sends its body; the host gets a
		// request without Expect and never sends an interim answer.
		x.cw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if x.cw.Flush() != nil {
			return false
		}
	}
	err := req.Write(x.uw)
	if err == nil {
		err = x.uw.Flush()
	}
	if err != nil {
		// The host closed the connection (an idle one it timed out, most
		// likely): close the tool's too, as the host would, so that its
		// client retries on a new one.
		if !quiet(x.p, err) {
			x.fail("%s: sending the request failed (%v); %s", x.host, err, runbook.See("secret-request-refused"))
		}
		return false
	}
	resp, ok := x.response(req)
	if !ok {
		return false
	}
	defer resp.Body.Close()
	if err := x.writeResponse(req, resp); err != nil {
		return false // the response is cut short: the tool sees an error
	}
	return !req.Close && !resp.Close
}

// response reads the host's answer to req, skipping interim (1xx) ones.
func (x *exchange) response(req *http.Request) (*http.Response, bool) {
	for {
		x.ul.n = maxHeaderBytes
		resp, err := http.ReadResponse(x.ur, req)
		x.ul.n = -1
		switch {
		case err == nil:
		case x.ul.hit:
			x.fail("%s: a response header over %d KiB; %s", x.host, maxHeaderBytes>>10, runbook.See("secret-request-refused"))
			return nil, false
		case quiet(x.p, err):
			return nil, false // as above: the host hung up, so does the proxy
		default:
			// Not the parser's text: it may quote a header line, and so an
			// echo of the value.
			x.fail("%s: the response is not valid HTTP/1.1; %s", x.host, runbook.See("secret-request-refused"))
			return nil, false
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			resp.Body.Close()
			x.fail("%s: the host switched protocols: only HTTP/1.1 goes to a host that gets a secret; %s", x.host, runbook.See("secret-request-refused"))
			return nil, false
		case resp.StatusCode < 200:
			resp.Body.Close()
			continue
		}
		for _, v := range resp.Header.Values("Content-Encoding") {
			for _, enc := range strings.Split(v, ",") {
				if enc = strings.TrimSpace(enc); enc != "" && !strings.EqualFold(enc, "identity") {
					resp.Body.Close()
					x.fail("%s: the response is encoded (Content-Encoding: %s), so the secret cannot be taken out of it; %s", x.host, enc, runbook.See("secret-request-refused"))
					return nil, false
				}
			}
		}
		return resp, true
	}
}

// writeResponse writes resp to the tool with every occurrence of the value
// in the status line, the headers and the body turned into the
// placeholder. A body goes chunked, whatever its framing was: replacing
// changes its length, and the length is known only at its end.
func (x *exchange) writeResponse(req *http.Request, resp *http.Response) error {
	s := x.p.secret
	out := func(v string) string { return strings.ReplaceAll(v, s.text, s.placeholder) }
	w := x.cw
	reason := strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))
	fmt.Fprintf(w, "HTTP/1.1 %03d %s\r\n", resp.StatusCode, out(reason))
	body := bodyAllowed(req.Method, resp.StatusCode)
	dropHopByHop(resp.Header)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		// A name that holds the value is dropped: the placeholder may have
		// bytes a header name cannot. Compared without case, since the
		// parser has already changed the name's.
		if body && k == "Content-Length" || strings.Contains(strings.ToLower(k), s.lowerText) {
			continue
		}
		for _, v := range resp.Header[k] {
			fmt.Fprintf(w, "%s: %s\r\n", k, out(v))
		}
	}
	if req.Close || resp.Close {
		w.WriteString("Connection: close\r\n")
	}
	if !body {
		w.WriteString("\r\n")
		return w.Flush()
	}
	w.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	cw := httputil.NewChunkedWriter(w)
	r := newReplacer(cw, s.value, []byte(s.placeholder))
	if x.buf == nil {
		x.buf = make([]byte, 32<<10)
	}
	buf := x.buf
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			// Each read goes on at once, less a tail of a fixed length
			// (none after a line end): a streamed answer streams, and how
			// it is cut says nothing of the value.
			if _, werr := r.Write(buf[:n]); werr != nil {
				return werr
			}
			if werr := w.Flush(); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	// Trailers, if the host sent any, are dropped with the rest of its
	// framing.
	if err := r.Flush(); err != nil {
		return err
	}
	if err := cw.Close(); err != nil {
		return err
	}
	w.WriteString("\r\n")
	return w.Flush()
}

// dropHopByHop removes the headers of one connection, and those its
// Connection header names.
func dropHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// bodyAllowed: RFC 9110 §6.4.1, no content in answers to HEAD, 1xx, 204
// and 304.
func bodyAllowed(method string, code int) bool {
	return method != http.MethodHead && code != http.StatusNoContent && code != http.StatusNotModified && code >= 200
}

// refused refuses a request of the tool's (a rule of this path, not the
// host's fault).
func (x *exchange) refused(format string, args ...any) {
	x.fail("%s: %s; %s", x.host, fmt.Sprintf(format, args...), runbook.See("secret-request-refused"))
}

// fail records a refusal and answers the tool with a 502 that says why,
// then the connection ends.
func (x *exchange) fail(format string, args ...any) {
	msg := x.p.refuse(format, args...)
	body := "boxmaker egress proxy refused this: " + msg + "\n"
	fmt.Fprintf(x.cw, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	x.cw.Flush()
}

// quiet reports whether err just means the connection ended (the tool
// hung up, or Close cut it): nothing to refuse. A TLS alert from the tool
// is not quiet: it says why the tool gave up (a CA it does not trust).
func quiet(p *Proxy, err error) bool {
	var ne net.Error
	return p.ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &ne) && ne.Timeout()
}

// limitReader bounds what a header block may read: n bytes more (n < 0:
// no bound). hit says the bound was reached.
type limitReader struct {
	r   io.Reader
	n   int64
	hit bool
}

var errTooLong = errors.New("egress: header block too long")

func (l *limitReader) Read(b []byte) (int, error) {
	if l.n == 0 {
		l.hit = true
		return 0, errTooLong
	}
	if l.n > 0 && int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}
