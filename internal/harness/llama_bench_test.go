package harness_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/harness"
	"boxmaker/internal/syncbuf"
)

// BenchmarkInferproxyRealChat is what inferproxy adds to a real chat
// request: the same streamed request as loopd's (its three tools, a system
// prompt, a user message, slot 0, the prompt cached) is sent straight to
// llama-server and through inferproxy (its own process, on a Unix socket),
// in turns, so both see the same load; each time is until the stream's
// end. It reports the medians, their ratio, and their difference and its
// ratio to the direct time. llama-server runs with -t 1 on a scripted model that
// answers 12 tokens.
func BenchmarkInferproxyRealChat(b *testing.B) {
	server, _, err := harness.LlamaPaths()
	if err != nil {
		b.Fatal(err)
	}
	bin := build(b)
	addr := startBareLlama(b, server, model(b, helloModel))
	dir, err := os.MkdirTemp("", "bxip") // short: a socket path
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	sock, conf := filepath.Join(dir, "infer.sock"), filepath.Join(dir, "inferproxy.toml")
	text := fmt.Sprintf("[upstream]\nurl = \"http://%s\"\n\n[listen]\nsocket = \"%s\"\n", addr, sock)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	proxyLog := &syncbuf.Buffer{}
	startProcess(b, proxyLog, filepath.Join(bin, "inferproxy"), "serve", "--config", conf)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("inferproxy did not listen:\n%s", proxyLog.String())
		}
	}
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	body := chatBody()
	for range 5 { // fill the slot's cache and open both connections
		chatOnce(b, direct, "http://"+addr, body)
		chatOnce(b, proxied, "http://infer", body)
	}
	var viaDirect, viaProxy []time.Duration
	for b.Loop() {
		viaDirect = append(viaDirect, chatOnce(b, direct, "http://"+addr, body))
		viaProxy = append(viaProxy, chatOnce(b, proxied, "http://infer", body))
	}
	d, p := median(viaDirect), median(viaProxy)
	b.ReportMetric(float64(d.Microseconds())/1000, "direct-ms/p50")
	b.ReportMetric(float64(p.Microseconds())/1000, "proxied-ms/p50")
	b.ReportMetric(float64((p-d).Microseconds())/1000, "added-ms/p50")
	b.ReportMetric(float64(p)/float64(d), "proxied/direct")
	b.ReportMetric(float64(p-d)/float64(d), "added/direct")
}

// chatBody is a chat request shaped like loopd's.
func chatBody() []byte {
	tool := func(name string) string {
		return `{"type":"function","function":{"name":"` + name + `","description":"` + strings.Repeat("Use it for the owner. ", 15) +
			`","parameters":{"type":"object","properties":{"tool":{"type":"string"},"arguments":{"type":"object"}},"required":["tool"]}}}`
	}
	return []byte(`{"id_slot":0,"cache_prompt":true,"stream":true,"tools":[` + tool("clock") + "," + tool("find_tool") + "," + tool("call_tool") +
		`],"messages":[{"role":"system","content":"You are the owner's assistant."},{"role":"user","content":"Hi there."}]}`)
}

// chatOnce sends body and reads the stream to its end, which must carry
// the scripted answer and the server's timings.
func chatOnce(b *testing.B, c *http.Client, base string, body []byte) time.Duration {
	t0 := time.Now()
	resp, err := c.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(t0)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d %v\n%s", base, resp.StatusCode, err, got)
	}
	ex := exchange{Stream: true}
	parseChat(&ex, got)
	if ex.Content != "Hello! I am a tiny scripted model in llama.cpp." || ex.Timings == nil {
		b.Fatalf("%s: the answer %q, timings %v", base, ex.Content, ex.Timings)
	}
	return took
}

// startBareLlama runs llama-server alone on a free loopback port until the
// benchmark ends and returns its host:port once /health answers.
func startBareLlama(b *testing.B, server, model string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	host, port, _ := net.SplitHostPort(addr)
	log := &syncbuf.Buffer{}
	startProcess(b, log, server, "-m", model, "--jinja", "-c", "4096", "-np", "1", "-t", "1", "--host", host, "--port", port)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("llama-server did not become healthy:\n%s", log.String())
		}
	}
}

// startProcess runs bin until the benchmark ends.
func startProcess(b *testing.B, log io.Writer, bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
}
