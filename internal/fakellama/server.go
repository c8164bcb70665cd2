// Package fakellama is a small fake of llama.cpp's llama-server, for tests
// and demos: its health, props, models and tokenize endpoints, and an
// OpenAI-compatible /v1/chat/completions that answers from a Script, streams
// chunks in llama-server's order and shape, keeps a prompt cache per slot
// (so timings.cache_n is the honest common prefix with the slot's previous
// prompt and reply), injects faults on demand, and records every request's
// exact bytes.
package fakellama

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Script answers chat completions; nil answers every one with a greeting.
	Script Script
	// NCtx is each slot's context size in tokens (default 4096).
	NCtx int
	// Slots is the number of slots, id_slot 0 to Slots-1 (default 1).
	Slots int
	// Model is the model's name in /v1/models and answers (default
	// "fakellama.gguf"); a request's "model" field, when set, is echoed.
	Model string
	// Now gives the "created" times (default time.Now).
	Now func() time.Time
}

// Server is a fake llama-server. It is an http.Handler; Serve runs it on a
// listener of the caller's choosing.
type Server struct {
	opts    Options
	slots   []*slot
	closing chan struct{}

	mu       sync.Mutex
	closed   bool
	hs       *http.Server
	calls    int
	records  []*Request
	finished int
	changed  chan struct{} // closed and replaced when a request finishes
}

// slot is one of llama-server's slots: a context whose cached tokens (the
// last prompt and what was generated after it) a later request can reuse.
type slot struct {
	mu     sync.Mutex // held for a whole completion: a busy slot makes others wait
	tokens []string
}

// New returns a fake server.
func New(opts Options) *Server {
	if opts.Script == nil {
		opts.Script = defaultScript
	}
	if opts.NCtx <= 0 {
		opts.NCtx = 4096
	}
	if opts.Slots <= 0 {
		opts.Slots = 1
	}
	if opts.Model == "" {
		opts.Model = "fakellama.gguf"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, closing: make(chan struct{}), changed: make(chan struct{})}
	for range opts.Slots {
		s.slots = append(s.slots, &slot{})
	}
	return s
}

// Serve answers requests on ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ln.Close()
	}
	s.hs = hs
	s.mu.Unlock()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops Serve, wakes every handler that is waiting on a delay, and
// closes open connections.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.closing)
	if s.hs != nil {
		return s.hs.Close()
	}
	return nil
}

// ServeHTTP records the request and answers it as llama-server would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rec := &Request{Method: r.Method, Path: r.RequestURI, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	s.records = append(s.records, rec)
	s.mu.Unlock()
	rw := &recWriter{ResponseWriter: w}
	defer s.finish(rec, rw)
	if err != nil {
		s.setOutcome(rec, OutcomeClientGone)
		return
	}
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/health" || r.URL.Path == "/v1/health"):
		writeJSON(rw, http.StatusOK, object{{"status", "ok"}})
	case r.Method == http.MethodGet && r.URL.Path == "/props":
		writeJSON(rw, http.StatusOK, s.props())
	case r.Method == http.MethodGet && (r.URL.Path == "/v1/models" || r.URL.Path == "/models"):
		writeJSON(rw, http.StatusOK, s.models())
	case r.Method == http.MethodPost && r.URL.Path == "/tokenize":
		s.tokenize(rw, body)
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/chat/completions"):
		s.chat(rw, r, rec, body)
	default:
		writeError(rw, http.StatusNotFound, "File Not Found")
	}
}

// finish records the response's status and outcome and wakes waiters.
func (s *Server) finish(rec *Request, rw *recWriter) {
	if p := recover(); p != nil {
		// http.ErrAbortHandler is how a Drop fault cuts the connection.
		defer panic(p)
	}
	s.mu.Lock()
	rec.Status = rw.status
	if rec.Outcome == "" {
		rec.Outcome = OutcomeComplete
	}
	s.finished++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// sleep waits d, or less if the client goes away or the server closes; it
// reports whether the whole wait passed.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.closing:
	}
	return false
}

// recWriter remembers the status a handler wrote.
type recWriter struct {
	http.ResponseWriter
	status int
}

func (w *recWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *recWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	writeValue(&b, v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes()) // a client that left needs no answer
}
