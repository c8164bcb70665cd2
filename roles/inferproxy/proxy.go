package inferproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"boxmaker/runbook"
)

// routes are the only requests forwarded: what loopd needs of llama-server,
// nothing more (no /slots, /props POST, /completion, /detokenize or web
// UI). POST /tokenize is how loopd learns the served model's special and
// control tokens (to neutralise them in untrusted text) and checks each new
// text before sending it: it only runs the tokenizer, touching no slot,
// cache or sampler, and its body is bounded like any other.
var routes = map[string]string{
	"/health":              http.MethodGet,
	"/props":               http.MethodGet,
	"/v1/models":           http.MethodGet,
	"/tokenize":            http.MethodPost,
	"/v1/chat/completions": http.MethodPost,
}

// dialTimeout bounds connecting to the model server. A refused connection
// fails at once anyway; this is for a host that does not answer at all.
const dialTimeout = 2 * time.Second

// proxy forwards allowed requests to the model server.
type proxy struct {
	upstream string
	maxBody  int64
	rp       *httputil.ReverseProxy
	tr       *http.Transport
	log      *log.Logger

	// active counts running handlers, so that Serve returns only after
	// every one of them has (each has an owner); closing refuses new ones.
	mu      sync.Mutex
	active  int
	closing bool
	idle    chan struct{} // closed when closing and active reaches 0
}

func newProxy(cfg *Config, logger *log.Logger) *proxy {
	target, _ := url.Parse(cfg.Upstream.URL) // checked by LoadConfig
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		// Never an environment proxy: model traffic goes to the model
		// server and nowhere else.
		Proxy:       nil,
		DialContext: dialer.DialContext,
		// The client's Accept-Encoding, or none, goes through as sent; the
		// transport must not ask for gzip and decode it on the way.
		DisableCompression:  true,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		// Larger than the 4 KiB default: fewer system calls per megabyte
		// of a long stream.
		ReadBufferSize:  copyBufferSize,
		WriteBufferSize: copyBufferSize,
	}
	p := &proxy{upstream: cfg.Upstream.URL, maxBody: cfg.Limits.MaxRequestBytes, tr: tr, log: logger,
		idle: make(chan struct{})}
	p.rp = &httputil.ReverseProxy{
		// Rewrite (not Director) adds no X-Forwarded-* headers and drops
		// any the client sent: the request reaches the model server as
		// loopd wrote it, hop-by-hop headers aside.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
		},
		Transport: tr,
		// Flush after every read: server-sent events pass as they arrive.
		FlushInterval: -1,
		BufferPool:    bufferPool{},
		ErrorHandler:  p.upstreamError,
		ErrorLog:      logger,
	}
	return p
}

// copyBufferSize is the size of the buffers a response is copied through.
const copyBufferSize = 64 << 10

// bufferPool lends ReverseProxy copy buffers of copyBufferSize.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (bufferPool) Get() []byte  { return buffers.Get().(*[copyBufferSize]byte)[:] }
func (bufferPool) Put(b []byte) { buffers.Put((*[copyBufferSize]byte)(b)) }

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "inferproxy is stopping", http.StatusServiceUnavailable)
		return
	}
	defer p.leave()

	// The request target must be exactly an allowed path: no query, no
	// absolute form, no escaped variant of a path.
	if method, ok := routes[r.URL.Path]; !ok || r.Method != method || r.RequestURI != r.URL.Path {
		p.refuse(w, http.StatusForbidden, fmt.Sprintf("%s %s is not forwarded: inferproxy passes only GET /health, GET /props, GET /v1/models, POST /tokenize and POST /v1/chat/completions",
			r.Method, r.RequestURI), runbook.See("infer-path-forbidden"))
		return
	}
	if r.ContentLength > p.maxBody {
		p.tooLarge(w, r.ContentLength)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		// The body is read whole (up to the limit) before anything is
		// sent: so the model server never sees part of a request that is
		// then refused, and so the upstream request never reads this body
		// after its reply has started to stream back. net/http may refuse
		// reads of an HTTP/1 request body once the response is written,
		// and the Transport's last read (for EOF, after the declared
		// length) then failed and closed the upstream connection in the
		// middle of the stream.
		body, err := io.ReadAll(io.LimitReader(r.Body, p.maxBody+1))
		if err != nil {
			return // the client went away while sending
		}
		if int64(len(body)) > p.maxBody {
			p.tooLarge(w, -1)
			return
		}
		r.Body, r.ContentLength, r.TransferEncoding = http.NoBody, 0, nil
		if len(body) > 0 {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
	}
	p.rp.ServeHTTP(w, r)
}

func (p *proxy) tooLarge(w http.ResponseWriter, n int64) {
	size := "more than the limit"
	if n >= 0 {
		size = fmt.Sprintf("%d bytes", n)
	}
	p.refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is %s; limits.max_request_bytes is %d", size, p.maxBody),
		runbook.See("infer-request-too-large"))
}

// refuse answers a request that is not forwarded, and logs it: a refusal
// means a bug in loopd or a loopd doing what it should not.
func (p *proxy) refuse(w http.ResponseWriter, status int, why, see string) {
	p.log.Printf("refused (%d): %s\n%s", status, why, see)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "inferproxy: %s\n%s\n", why, see) // a client that left needs no answer
}

// upstreamError answers when the model server could not be reached or did
// not answer. A mid-stream failure never gets here: ReverseProxy then cuts
// the client's connection, so loopd sees a broken stream, not a short one.
func (p *proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		p.log.Printf("%s %s: the client went away; the request to the model server was cancelled", r.Method, r.URL.Path)
		return
	}
	what := "gave no usable answer" // a malformed response, a reset before the headers
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		what = "did not answer in time"
	case errors.As(err, &oe) && oe.Op == "dial":
		what = "could not be reached"
	}
	p.log.Printf("%s %s: the model server at %s %s: %v\n%s", r.Method, r.URL.Path, p.upstream, what, err, runbook.See("model-server-unreachable"))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = fmt.Fprintf(w, "inferproxy: the model server at %s %s: %v\n%s\n", p.upstream, what, err, runbook.See("model-server-unreachable"))
}

func (p *proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.active++
	return true
}

func (p *proxy) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active--
	if p.closing && p.active == 0 {
		close(p.idle)
	}
}

// close refuses new requests and returns a channel closed once every
// running handler has returned.
func (p *proxy) close() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closing {
		p.closing = true
		if p.active == 0 {
			close(p.idle)
		}
	}
	return p.idle
}
