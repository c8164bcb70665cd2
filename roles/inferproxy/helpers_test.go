package inferproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
)

// running is an inferproxy under test.
type running struct {
	socket string
	client *http.Client
	log    *syncbuf.Buffer
	stop   func() error // cancels Serve and returns its error
}

// startProxy runs Serve for upstream with a socket in a fresh directory.
func startProxy(t testing.TB, upstream string, maxBody int64, grace time.Duration) *running {
	t.Helper()
	cfg := &Config{}
	cfg.Upstream.URL = upstream
	cfg.Listen.Socket = filepath.Join(t.TempDir(), "run", "infer.sock")
	cfg.Limits.MaxRequestBytes = maxBody
	return startWith(t, cfg, grace)
}

func startWith(t testing.TB, cfg *Config, grace time.Duration) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncbuf.Buffer{}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logs, grace, ready) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	r := &running{socket: cfg.Listen.Socket, client: unixClient(cfg.Listen.Socket), log: logs}
	var once sync.Once
	var err error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
			r.client.CloseIdleConnections()
		})
		return err
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return r
}

// unixClient is an HTTP client whose every connection goes to socket.
func unixClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DisableCompression: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// fake runs a fakellama on loopback for the test's lifetime.
func fake(t testing.TB, opts fakellama.Options) (*fakellama.Server, string) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return time.Unix(1758096300, 0) }
	}
	s := fakellama.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		ts.Close()
	})
	return s, ts.URL
}

// raw sends request (a whole HTTP/1.1 request, as text) on the socket and
// returns the response's status and body.
func raw(t *testing.T, socket, request string) (int, string) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

const chatBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"What time is it?"}]}`

func postChat(t *testing.T, c *http.Client, url, body string) (*http.Response, error) {
	t.Helper()
	return c.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
}
