// Package llama is loopd's client for llama-server's HTTP API, spoken
// through inferproxy on infer.sock (a Unix socket; loopd never opens TCP):
// /health for the self-test, /props for the context size and the number of
// slots, and streamed /v1/chat/completions, reassembled into the
// assistant's fields exactly as the server sent them.
//
// llama-server's JSON is a foreign format, read leniently (unknown members
// ignored) but never loosely: names match case-sensitively, and duplicate
// names and invalid UTF-8 are errors (go-json-experiment's defaults).
package llama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// Client talks to llama-server over a Unix socket.
type Client struct {
	tr *http.Transport
	hc *http.Client
	// ReplyTimeout bounds the wait for a response to start (headers and
	// first event); IdleTimeout the gap between two reads of a stream.
	ReplyTimeout time.Duration
	IdleTimeout  time.Duration
}

// New returns a client for the server behind socket.
func New(socket string, reply, idle time.Duration) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		// No proxy from the environment and no gzip: the bytes are what
		// the server wrote, and the only way out is the socket.
		Proxy:              nil,
		DisableCompression: true,
		// One connection per request: a Unix socket connection costs a few
		// microseconds against seconds of model time, and no request can
		// meet a kept-alive connection that inferproxy is tearing down.
		DisableKeepAlives: true,
	}
	return &Client{tr: tr, hc: &http.Client{Transport: tr}, ReplyTimeout: reply, IdleTimeout: idle}
}

// Close drops idle connections (and the transport's goroutines for them).
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// base is the URL every request goes to; the host is a placeholder, since
// the dialer ignores it, and inferproxy forwards the request as it is.
const base = "http://infer"

// Error is a failure to get an answer from the model server.
type Error struct {
	What string
	// Status is the HTTP status when the server answered with an error.
	Status int
	// Type is the error's type in llama-server's answer
	// ({"error":{"type":…}}), when it gave one.
	Type string
	// PromptTokens and NCtx are the request's size and the slot's context,
	// in tokens, when the server refused the request as too long for its
	// context (ExceedsContext); 0 when it did not say.
	PromptTokens, NCtx int
	Err                error
}

// ExceedsContext reports whether the server refused the request because
// its prompt does not fit the slot's context. llama-server answers 400 with
// the type exceed_context_size_error and the two sizes; the message test
// covers a build that names the type differently but says the same.
func (e *Error) ExceedsContext() bool {
	return e.Status == http.StatusBadRequest &&
		(e.Type == "exceed_context_size_error" || strings.Contains(e.What, "exceeds the available context size"))
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.What + ": " + e.Err.Error()
	}
	return e.What
}

func (e *Error) Unwrap() error { return e.Err }

// Health asks /health; nil means the model is loaded and answering.
func (c *Client) Health(ctx context.Context) error {
	body, err := c.get(ctx, "/health")
	if err != nil {
		return err
	}
	var h struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "ok" {
		return &Error{What: fmt.Sprintf("the model server's /health answered %q", snippet(body))}
	}
	return nil
}

// NCtx asks /props for the context size of a slot.
func (c *Client) NCtx(ctx context.Context) (int, error) {
	body, err := c.get(ctx, "/props")
	if err != nil {
		return 0, err
	}
	var p struct {
		NCtx     int `json:"n_ctx"`
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return 0, &Error{What: "the model server's /props is not JSON", Err: err}
	}
	n := p.Settings.NCtx
	if n == 0 {
		n = p.NCtx
	}
	if n <= 0 {
		return 0, &Error{What: "the model server's /props gives no n_ctx"}
	}
	return n, nil
}

// infoTimeout bounds /health and /props: the server answers them at once
// even while it is busy generating.
const infoTimeout = 10 * time.Second

func (c *Client) get(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, min(c.ReplyTimeout, infoTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, &Error{What: "cannot build the request", Err: err}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &Error{What: "cannot reach the model server through infer.sock", Err: unwrapURL(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, &Error{What: "the model server's answer to " + path + " was cut short", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp, body)
	}
	return body, nil
}

// statusError describes a non-200 answer, with llama-server's own message
// ({"error":{"message":…}}) when there is one.
func statusError(resp *http.Response, body []byte) error {
	var e struct {
		Error struct {
			Message       string `json:"message"`
			Type          string `json:"type"`
			NPromptTokens int    `json:"n_prompt_tokens"`
			NCtx          int    `json:"n_ctx"`
		} `json:"error"`
	}
	msg := snippet(body)
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	return &Error{What: fmt.Sprintf("the model server answered %s: %s", resp.Status, msg), Status: resp.StatusCode,
		Type: e.Error.Type, PromptTokens: e.Error.NPromptTokens, NCtx: e.Error.NCtx}
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(bytes.ToValidUTF8(b, []byte("?"))))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// unwrapURL drops net/http's "Post "http://infer/…":" wrapper, which names
// a host that does not exist.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
