package fakellama

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var fixedNow = func() time.Time { return time.Unix(1758096300, 0) }

// start runs a fake on a loopback listener for the test's lifetime.
func start(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	s := New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		ts.Close()
	})
	return s, ts.URL
}

// post sends a chat completion request and returns the status and body.
func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v (got %q)", err, b)
	}
	return resp.StatusCode, b
}

// events splits an SSE body into its events' data, without "data: ".
func events(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.SplitAfter(string(body), "\n\n") {
		if ev == "" {
			continue
		}
		if !strings.HasPrefix(ev, "data: ") || !strings.HasSuffix(ev, "\n\n") {
			t.Fatalf("malformed event %q", ev)
		}
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(ev, "data: "), "\n\n"))
	}
	return out
}

// chunk is the part of a streamed chunk the tests look at.
type chunk struct {
	Choices []struct {
		FinishReason *string         `json:"finish_reason"`
		Delta        json.RawMessage `json:"delta"`
	} `json:"choices"`
	Usage   *json.RawMessage `json:"usage"`
	Timings *struct {
		CacheN     int `json:"cache_n"`
		PromptN    int `json:"prompt_n"`
		PredictedN int `json:"predicted_n"`
	} `json:"timings"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

func decode(t *testing.T, data string) chunk {
	t.Helper()
	var c chunk
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatalf("chunk %q: %v", data, err)
	}
	return c
}

// conversation builds a request body from messages given as JSON.
func conversation(stream bool, msgs ...string) string {
	var b bytes.Buffer
	b.WriteString(`{"model":"m","stream":`)
	if stream {
		b.WriteString("true")
	} else {
		b.WriteString("false")
	}
	b.WriteString(`,"messages":[` + strings.Join(msgs, ",") + `]}`)
	return b.String()
}

func waitAll(t *testing.T, s *Server, n int) []Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reqs, err := s.WaitFinished(ctx, n)
	if err != nil {
		t.Fatalf("waiting for %d requests to finish: %v", n, err)
	}
	return reqs
}
