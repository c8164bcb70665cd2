package harness_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// recorder sits between inferproxy and llama-server and keeps what the
// server itself answered: which paths loopd asked for, and for every chat
// request its slot, whether it streamed, the text, and the server's own
// timings (cache_n above all). inferproxy forwards no /slots, and the
// server's log does not print cache_n, so the answers are where it is read.
// It only copies bytes; every role is still its own process.
type recorder struct {
	mu  sync.Mutex
	log []exchange
	srv *http.Server
}

// exchange is one request and the server's answer.
type exchange struct {
	Method, Path string
	Status       int
	Slot         int  // id_slot of a chat request
	Stream       bool // answered as text/event-stream
	Chunks       int  // data: events of a stream
	Content      string
	Reasoning    string
	Timings      *timings
}

// timings are the counts llama-server reports with every answer.
type timings struct {
	CacheN     int `json:"cache_n"`
	PromptN    int `json:"prompt_n"`
	PredictedN int `json:"predicted_n"`
}

// startRecorder forwards to the server at addr (host:port) and returns
// its own URL for inferproxy's upstream.
func startRecorder(t *testing.T, addr string) (*recorder, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	target := &url.URL{Scheme: "http", Host: addr}
	proxy := &httputil.ReverseProxy{
		// Every chunk of a stream goes on at once, as without the recorder.
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
		},
		ModifyResponse: func(resp *http.Response) error {
			req := resp.Request
			ex := exchange{Method: req.Method, Path: req.URL.Path, Status: resp.StatusCode, Slot: -1}
			if body, ok := req.Context().Value(bodyKey{}).([]byte); ok {
				var b struct {
					Slot *int `json:"id_slot"`
				}
				if json.Unmarshal(body, &b) == nil && b.Slot != nil {
					ex.Slot = *b.Slot
				}
			}
			ex.Stream = strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
			resp.Body = &teeBody{ReadCloser: resp.Body, done: func(b []byte) { r.add(ex, b) }}
			return nil
		},
	}
	// The request body is read here, whole, so the chat request's slot
	// can be recorded with its answer.
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, req.WithContext(contextWithBody(req, body)))
	})
	r.srv = &http.Server{Handler: handler}
	done := make(chan struct{})
	go func() { defer close(done); _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { r.srv.Close(); <-done })
	return r, "http://" + ln.Addr().String()
}

func (r *recorder) add(ex exchange, body []byte) {
	if strings.HasSuffix(ex.Path, "/chat/completions") {
		parseChat(&ex, body)
	}
	r.mu.Lock()
	r.log = append(r.log, ex)
	r.mu.Unlock()
}

// all is every exchange so far; chats only the chat requests.
func (r *recorder) all() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.log...)
}

func (r *recorder) chats() []exchange {
	var out []exchange
	for _, ex := range r.all() {
		if strings.HasSuffix(ex.Path, "/chat/completions") {
			out = append(out, ex)
		}
	}
	return out
}

// parseChat reads an answer, streamed or whole, for its text and timings.
func parseChat(ex *exchange, body []byte) {
	type msg struct {
		Content   *string `json:"content"`
		Reasoning *string `json:"reasoning_content"`
	}
	var one struct {
		Choices []struct {
			Delta   msg `json:"delta"`
			Message msg `json:"message"`
		} `json:"choices"`
		Timings *timings `json:"timings"`
	}
	take := func(data []byte) {
		one.Choices, one.Timings = nil, nil
		if json.Unmarshal(data, &one) != nil {
			return
		}
		for _, c := range one.Choices {
			for _, m := range []msg{c.Delta, c.Message} {
				if m.Content != nil {
					ex.Content += *m.Content
				}
				if m.Reasoning != nil {
					ex.Reasoning += *m.Reasoning
				}
			}
		}
		if one.Timings != nil {
			ex.Timings = one.Timings
		}
	}
	if !ex.Stream {
		take(body)
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && string(data) != "[DONE]" {
			ex.Chunks++
			take(data)
		}
	}
}

// teeBody keeps what the client reads and hands it over at the end.
type teeBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	once sync.Once
	done func([]byte)
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	if err == io.EOF {
		b.once.Do(func() { b.done(b.buf.Bytes()) })
	}
	return n, err
}

func (b *teeBody) Close() error {
	b.once.Do(func() { b.done(b.buf.Bytes()) })
	return b.ReadCloser.Close()
}

type bodyKey struct{}

func contextWithBody(req *http.Request, body []byte) context.Context {
	return context.WithValue(req.Context(), bodyKey{}, body)
}
