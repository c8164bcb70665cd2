package fakellama

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
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

func TestInfoEndpoints(t *testing.T) {
	_, url := start(t, Options{NCtx: 8192, Slots: 3, Model: "qwen.gguf"})
	if status, b := get(t, url+"/health"); status != 200 || b != `{"status":"ok"}` {
		t.Fatalf("health: %d %s", status, b)
	}
	status, b := get(t, url+"/props")
	if status != 200 || !strings.HasPrefix(b, `{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":8192,`) ||
		!strings.Contains(b, `"total_slots":3,"model_path":"qwen.gguf"`) {
		t.Fatalf("props: %d %s", status, b)
	}
	status, b = get(t, url+"/v1/models")
	if status != 200 || !strings.HasPrefix(b, `{"object":"list","data":[{"id":"qwen.gguf","object":"model","created":1758096300,"owned_by":"llamacpp"`) {
		t.Fatalf("models: %d %s", status, b)
	}
	if status, b := get(t, url+"/slots"); status != 404 || b != `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}` {
		t.Fatalf("unknown path: %d %s", status, b)
	}
}

func TestRecordsExactBytes(t *testing.T) {
	s, url := start(t, Options{})
	body := "{\"messages\": [ {\"role\":\"user\",\"content\":\"<é>\\u00e9\"} ] , \"extra\":1}"
	if status, b := post(t, url, body); status != 200 || !strings.Contains(string(b), `"content":"Hello from fakellama."`) {
		t.Fatalf("%d %s", status, b)
	}
	get(t, url+"/props?x=1")
	reqs := waitAll(t, s, 2)
	if r := reqs[0]; r.Method != "POST" || r.Path != "/v1/chat/completions" || string(r.Body) != body ||
		r.Header.Get("Content-Type") != "application/json" || r.Status != 200 || r.Outcome != OutcomeComplete {
		t.Fatalf("recorded %+v", r)
	}
	if r := reqs[1]; r.Method != "GET" || r.Path != "/props?x=1" || len(r.Body) != 0 {
		t.Fatalf("recorded %+v", r)
	}
}

func TestServeAndClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{})
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	if status, _ := get(t, "http://"+ln.Addr().String()+"/health"); status != 200 {
		t.Fatalf("health %d", status)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
}
