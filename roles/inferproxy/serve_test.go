package inferproxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
)

func fakeOpts() fakellama.Options { return fakellama.Options{} }

// noProxyGoroutines fails if a goroutine of the proxy outlives Serve.
func noProxyGoroutines(t *testing.T) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "inferproxy.(*proxy)") && !strings.Contains(stacks, "inferproxy.serve(") &&
			!strings.Contains(stacks, "httputil.(*ReverseProxy)") {
			return
		}
	}
	t.Fatalf("goroutines of the proxy outlived Serve:\n%s", stacks)
}

func TestStopLetsShortStreamsFinish(t *testing.T) {
	reply := fakellama.Reply{Content: "one two three four five", Fault: fakellama.Fault{EventDelay: 20 * time.Millisecond}}
	_, url := fake(t, fakellama.Options{Script: fakellama.Queue(reply)})
	p := startProxy(t, url, DefaultMaxRequestBytes, 5*time.Second)
	resp, err := postChat(t, p.client, "http://infer", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- p.stop() }()
	rest, err := io.ReadAll(br)
	if err != nil || !bytes.HasSuffix(rest, []byte("data: [DONE]\n\n")) {
		t.Fatalf("the stream in flight was cut: %v\n%s\ninferproxy logged:\n%s", err, rest, p.log.String())
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	noProxyGoroutines(t)
}

func TestStopCutsLongStreamsAfterGrace(t *testing.T) {
	slow := fakellama.Reply{Content: strings.Repeat("word ", 1000), Fault: fakellama.Fault{EventDelay: 10 * time.Millisecond}}
	upstream, url := fake(t, fakellama.Options{Script: fakellama.Queue(slow)})
	p := startProxy(t, url, DefaultMaxRequestBytes, 100*time.Millisecond)
	resp, err := postChat(t, p.client, "http://infer", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("stop took %v with a grace of 100ms", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reqs, err := upstream.WaitFinished(ctx, 1)
	if err != nil || reqs[0].Outcome != fakellama.OutcomeClientGone {
		t.Fatalf("the model server's stream was not cancelled: %v %+v", err, reqs)
	}
	if !strings.Contains(p.log.String(), "cutting requests still in flight") {
		t.Fatalf("log:\n%s", p.log.String())
	}
	noProxyGoroutines(t)
}

func writeConfig(t *testing.T, upstream, socket string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inferproxy.toml")
	data := "[upstream]\nurl = \"" + upstream + "\"\n[listen]\nsocket = \"" + socket + "\"\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runMain(args ...string) (int, string) {
	var out, errb bytes.Buffer
	code := Main("inferproxy", args, strings.NewReader(""), &out, &errb)
	return code, out.String() + errb.String()
}

func TestServeCommandRefusesBadConfig(t *testing.T) {
	path := writeConfig(t, "https://127.0.0.1:8080", "/tmp/x.sock")
	code, out := runMain("serve", "--config", path)
	if code != 1 || !strings.Contains(out, path+":2: upstream.url:") ||
		!strings.HasSuffix(out, "\nsee docs/runbook.md#inferproxy-config-invalid\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestServeCommandRefusesBadSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	code, out := runMain("serve", "--config", writeConfig(t, "http://127.0.0.1:8080", filepath.Join(dir, "infer.sock")))
	if code != 1 || !strings.HasSuffix(out, "\nsee docs/runbook.md#inferproxy-socket-unavailable\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestServeCommandStopsOnSIGTERM runs the real command and signals this
// process: serve has registered for SIGTERM, so the signal stops it rather
// than the test binary.
func TestServeCommandStopsOnSIGTERM(t *testing.T) {
	_, url := fake(t, fakeOpts())
	socket := filepath.Join(t.TempDir(), "run", "infer.sock")
	done := make(chan int, 1)
	var out string
	go func() {
		code, o := runMain("serve", "--config", writeConfig(t, url, socket))
		out = o
		done <- code
	}()
	client := unixClient(socket)
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := client.Get("http://infer/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inferproxy serve did not come up: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(out, "inferproxy: stopping") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("inferproxy serve did not stop on SIGTERM")
	}
	if _, err := os.Lstat(socket); err == nil {
		t.Fatal("the socket is left behind")
	}
}
