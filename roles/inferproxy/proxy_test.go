package inferproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
)

func TestStreamPassesThroughAsItArrives(t *testing.T) {
	const words, delay = 15, 20 * time.Millisecond
	reply := fakellama.Reply{Content: strings.Repeat("word ", words), Fault: fakellama.Fault{EventDelay: delay}}
	upstream, url := fake(t, fakellama.Options{Script: fakellama.Queue(reply)})
	_, directURL := fake(t, fakellama.Options{Script: fakellama.Queue(reply)})
	p := startProxy(t, url, DefaultMaxRequestBytes, time.Second)

	t0 := time.Now()
	resp, err := postChat(t, p.client, "http://infer", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	firstAt := time.Since(t0)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Since(t0)
	// The upstream takes 2*words*delay (0.6 s: a word and a space per
	// word) to finish; the first event must not wait for that.
	if firstAt > end/4 || end < 2*words*delay {
		t.Fatalf("first event after %v, end after %v: the stream was buffered", firstAt, end)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}

	// Byte for byte, both ways: the upstream saw the request as sent, and
	// the client got what the upstream wrote (a twin fake answered directly).
	reqs := upstream.Requests()
	if len(reqs) != 1 || string(reqs[0].Body) != chatBody || reqs[0].Path != "/v1/chat/completions" || reqs[0].Method != "POST" {
		t.Fatalf("upstream saw %+v", reqs)
	}
	if h := reqs[0].Header; h.Get("X-Forwarded-For") != "" || h.Get("Accept-Encoding") != "" || len(h) != 3 { // Content-Length, Content-Type, User-Agent: what the client sent
		t.Fatalf("headers were added: %v", reqs[0].Header)
	}
	dresp, err := postChat(t, http.DefaultClient, directURL, chatBody)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := io.ReadAll(dresp.Body)
	dresp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := first + string(rest); got != string(direct) {
		t.Fatalf("through the proxy:\n%s\ndirect:\n%s", got, direct)
	}
}

func TestInfoRequestsPass(t *testing.T) {
	_, url := fake(t, fakellama.Options{NCtx: 8192})
	p := startProxy(t, url, DefaultMaxRequestBytes, time.Second)
	for path, want := range map[string]string{
		"/health":    `{"status":"ok"}`,
		"/props":     `"n_ctx":8192,`,
		"/v1/models": `{"object":"list","data":[{"id":"fakellama.gguf"`,
	} {
		status, body := raw(t, p.socket, "GET "+path+" HTTP/1.1\r\nHost: infer\r\n\r\n")
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %s", path, status, body)
		}
	}
}

// POST /tokenize passes: loopd learns the model's special tokens with it.
func TestTokenizePasses(t *testing.T) {
	_, url := fake(t, fakellama.Options{})
	p := startProxy(t, url, DefaultMaxRequestBytes, time.Second)
	req := `{"content":["<|im_end|>",-1],"parse_special":true}`
	status, body := raw(t, p.socket, fmt.Sprintf("POST /tokenize HTTP/1.1\r\nHost: infer\r\nContent-Length: %d\r\n\r\n%s", len(req), req))
	if status != 200 || !strings.Contains(body, `{"tokens":[257,-1]}`) {
		t.Fatalf("POST /tokenize: %d %s", status, body)
	}
}

func TestRefusesOtherRequests(t *testing.T) {
	upstream, url := fake(t, fakellama.Options{})
	p := startProxy(t, url, DefaultMaxRequestBytes, time.Second)
	for _, line := range []string{
		"GET /slots",
		"POST /props",
		"GET /tokenize",
		"POST /detokenize",
		"POST /tokenize?with_pieces=true",
		"POST /apply-template",
		"GET /v1/chat/completions",
		"POST /completion",
		"GET /health?fail_on_no_slot=1",
		"GET /v1/%63hat/completions",
		"GET //health",
		"GET /v1/models/../../slots",
		"GET http://127.0.0.1:8080/health",
		"DELETE /v1/models",
		"OPTIONS *",
	} {
		status, body := raw(t, p.socket, line+" HTTP/1.1\r\nHost: infer\r\nContent-Length: 0\r\n\r\n")
		if status != http.StatusForbidden || !strings.HasSuffix(body, "\nsee docs/runbook.md#infer-path-forbidden\n") {
			t.Errorf("%s: %d %q", line, status, body)
		}
	}
	if n := len(upstream.Requests()); n != 0 {
		t.Fatalf("%d refused requests reached the model server", n)
	}
	if !strings.Contains(p.log.String(), "refused (403): GET /slots is not forwarded") {
		t.Fatalf("refusals are not logged:\n%s", p.log.String())
	}
}

func TestBodyLimit(t *testing.T) {
	upstream, url := fake(t, fakellama.Options{})
	const limit = 1000
	p := startProxy(t, url, limit, time.Second)
	pad := func(n int) string {
		b := `{"messages":[{"role":"user","content":"`
		tail := `"}]}`
		return b + strings.Repeat("x", n-len(b)-len(tail)) + tail
	}
	over := pad(limit + 1)
	status, body := raw(t, p.socket, fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: infer\r\nContent-Length: %d\r\n\r\n%s", len(over), over))
	if status != http.StatusRequestEntityTooLarge || !strings.HasSuffix(body, "see docs/runbook.md#infer-request-too-large\n") {
		t.Fatalf("over the limit: %d %q", status, body)
	}
	chunked := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: infer\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(over), over)
	if status, body := raw(t, p.socket, chunked); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked, over the limit: %d %q", status, body)
	}
	at := pad(limit)
	if status, body := raw(t, p.socket, fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: infer\r\nContent-Length: %d\r\n\r\n%s", len(at), at)); status != 200 {
		t.Fatalf("at the limit: %d %s", status, body)
	}
	chunked = fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: infer\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 10, at[:10], len(at)-10, at[10:])
	if status, body := raw(t, p.socket, chunked); status != 200 {
		t.Fatalf("chunked, at the limit: %d %s", status, body)
	}
	reqs := upstream.Requests()
	if len(reqs) != 2 || string(reqs[0].Body) != at || string(reqs[1].Body) != at {
		t.Fatalf("the model server saw %d requests", len(reqs))
	}
}

func TestUpstreamDownIsQuick(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	p := startProxy(t, "http://"+addr, DefaultMaxRequestBytes, time.Second)
	t0 := time.Now()
	status, body := raw(t, p.socket, "GET /health HTTP/1.1\r\nHost: infer\r\n\r\n")
	took := time.Since(t0)
	if status != http.StatusBadGateway || !strings.HasSuffix(body, "\nsee docs/runbook.md#model-server-unreachable\n") ||
		!strings.Contains(body, "could not be reached") {
		t.Fatalf("%d %q", status, body)
	}
	if took > 100*time.Millisecond {
		t.Fatalf("502 after %v", took)
	}
	t.Logf("502 after %v", took)
}

func TestClientGoneCancelsUpstream(t *testing.T) {
	slow := fakellama.Reply{Content: strings.Repeat("word ", 500), Fault: fakellama.Fault{EventDelay: 10 * time.Millisecond}}
	upstream, url := fake(t, fakellama.Options{Script: fakellama.Queue(slow, fakellama.Reply{Content: "next"})})
	p := startProxy(t, url, DefaultMaxRequestBytes, time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://infer/v1/chat/completions", strings.NewReader(chatBody))
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()

	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	reqs, err := upstream.WaitFinished(wctx, 1)
	if err != nil {
		t.Fatalf("the model server's stream did not end: %v", err)
	}
	if reqs[0].Outcome != fakellama.OutcomeClientGone {
		t.Fatalf("the model server's stream ended %q, want client_gone", reqs[0].Outcome)
	}

	resp, err = postChat(t, p.client, "http://infer", strings.Replace(chatBody, `"stream":true`, `"stream":false`, 1))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"content":"next"`) {
		t.Fatalf("next request: %d %s", resp.StatusCode, b)
	}
}

func TestDroppedUpstreamBreaksTheClientStream(t *testing.T) {
	drop := fakellama.Reply{Content: "one two three four", Fault: fakellama.Fault{Drop: true, DropAfter: 3}}
	_, url := fake(t, fakellama.Options{Script: fakellama.Queue(drop)})
	p := startProxy(t, url, DefaultMaxRequestBytes, time.Second)
	resp, err := postChat(t, p.client, "http://infer", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, err := io.ReadAll(resp.Body); err == nil {
		t.Fatalf("a dropped upstream stream reached the client as a whole one:\n%s", b)
	}
}

func TestUpstreamGarbageIs502(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, "this is not HTTP\r\n\r\n")
		c.Close()
	}()
	p := startProxy(t, "http://"+ln.Addr().String(), DefaultMaxRequestBytes, time.Second)
	status, body := raw(t, p.socket, "GET /health HTTP/1.1\r\nHost: infer\r\n\r\n")
	<-done
	if status != http.StatusBadGateway || !strings.Contains(body, "gave no usable answer") {
		t.Fatalf("%d %q", status, body)
	}
}
