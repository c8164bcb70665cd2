package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
	"boxmaker/roles/loopd/internal/config"
	"boxmaker/wire"
)

// setup makes a home with core memory and a config pointing into a short
// temporary directory (socket paths are limited to 108 bytes); listen is
// more of the [listen] table.
func setup(t *testing.T, listen ...string) (config.Config, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "srv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(home, "memory"), 0o700)
	if err := os.WriteFile(filepath.Join(home, "memory", "core.md"), []byte("core"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := `[paths]
home = "` + home + `"
[model]
socket = "` + filepath.Join(dir, "infer.sock") + `"
reply_timeout_s = 2
[listen]
socket = "` + filepath.Join(dir, "run", "loop.sock") + `"
` + strings.ReplaceAll(strings.Join(listen, "\n"), "[[dir]]", dir) + "\n"
	cfg, err := config.Parse("loopd.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

func startFake(t *testing.T, sock string, opts fakellama.Options) *fakellama.Server {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := fakellama.New(opts)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return srv
}

func TestSelftestFails(t *testing.T) {
	cfg, _ := setup(t)
	os.Remove(filepath.Join(cfg.Paths.Home, "memory", "core.md"))
	err := Run(context.Background(), Options{Config: cfg, Stderr: io.Discard})
	var st *SelftestError
	if !errors.As(err, &st) || len(st.Problems) != 2 {
		t.Fatalf("got %v", err)
	}
	if !strings.HasSuffix(st.Problems[0], "see docs/runbook.md#core-memory-unreadable") ||
		!strings.Contains(st.Problems[1], "the model does not answer /health through") ||
		!strings.HasSuffix(err.Error(), "see docs/runbook.md#loopd-selftest-failed") {
		t.Fatalf("problems %q", st.Problems)
	}
	if _, err := os.Stat(cfg.Listen.Socket); !os.IsNotExist(err) {
		t.Fatal("loop.sock exists after a failed self-test")
	}
}

// loopd serve end to end: the self-test through infer.sock, a say over
// loop.sock, and a clean stop.
func TestServe(t *testing.T) {
	cfg, _ := setup(t)
	fake := startFake(t, cfg.Model.Socket, fakellama.Options{NCtx: 8192, Script: fakellama.Queue(
		fakellama.Reply{ToolCalls: []fakellama.ToolCall{{Name: "clock", Arguments: "{}"}}},
		fakellama.Reply{Content: "It is 08:05."},
	)})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	var stderr syncbuf.Buffer
	go func() {
		done <- Run(ctx, Options{Config: cfg, Stderr: &stderr, Ready: func() { close(ready) },
			Now: func() time.Time { return time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve ended: %v\n%s", err, stderr.String())
	}
	c, err := net.Dial("unix", cfg.Listen.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	wire.WriteEnvelope(c, wire.Request(1, wire.Say{Text: "what time is it?"}))
	var last wire.Envelope
	n := 0
	for {
		e, err := wire.ReadEnvelope(c)
		if err != nil {
			break
		}
		last, n = e, n+1
	}
	if r, ok := last.Msg.(wire.TurnReply); !ok || r.Content != "It is 08:05." || n != 4 {
		t.Fatalf("%d frames, last %#v", n, last.Msg)
	}
	// The clock's answer reached the model.
	reqs := fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, `"content":"2026-09-17T08:05:00.000Z (Thursday, UTC)"`) {
		t.Fatalf("request %s", body)
	}
	if !strings.Contains(stderr.String(), "model context 8192 tokens") {
		t.Fatalf("stderr %q", stderr.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfg.Listen.Socket); !os.IsNotExist(err) {
		t.Fatalf("loop.sock left behind: %v", err)
	}
}

// Without the model's special tokens (here, an inferproxy of old that
// refuses /tokenize), loopd does not serve: it fails closed.
func TestSelftestNeedsSpecialTokens(t *testing.T) {
	cfg, _ := setup(t)
	ln, err := net.Listen("unix", cfg.Model.Socket)
	if err != nil {
		t.Fatal(err)
	}
	fake := fakellama.New(fakellama.Options{})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tokenize" {
			http.Error(w, "inferproxy: POST /tokenize is not forwarded", http.StatusForbidden)
			return
		}
		fake.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	err = Run(context.Background(), Options{Config: cfg, Stderr: io.Discard})
	var st *SelftestError
	if !errors.As(err, &st) || len(st.Problems) != 1 ||
		!strings.Contains(st.Problems[0], "cannot learn the served model's special tokens") ||
		!strings.HasSuffix(st.Problems[0], "see docs/runbook.md#loopd-special-tokens") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(cfg.Listen.Socket); !os.IsNotExist(err) {
		t.Fatal("loop.sock exists after a failed self-test")
	}
}
