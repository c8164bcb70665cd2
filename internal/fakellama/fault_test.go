package fakellama

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHTTPErrorFault(t *testing.T) {
	_, url := start(t, Options{Script: Queue(Reply{Fault: Fault{Status: 500, Message: "boom"}})})
	status, b := post(t, url, conversation(true, user1))
	if want := `{"error":{"code":500,"message":"boom","type":"server_error"}}`; status != 500 || string(b) != want {
		t.Fatalf("got %d %s, want 500 %s", status, b, want)
	}
	// The queue is spent: the next request is an error too, saying so.
	status, b = post(t, url, conversation(true, user1))
	if status != 500 || !strings.Contains(string(b), "no reply for chat request 1") {
		t.Fatalf("past the script: %d %s", status, b)
	}
}

func TestDropMidStream(t *testing.T) {
	s, url := start(t, Options{Script: Queue(Reply{Content: "one two three four", Fault: Fault{Drop: true, DropAfter: 3}})})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(conversation(true, user1)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("a dropped stream read to its end: %s", b)
	}
	if n := strings.Count(string(b), "\n\n"); n != 3 {
		t.Fatalf("%d whole events before the drop, want 3: %q", n, b)
	}
	if got := waitAll(t, s, 1)[0].Outcome; got != OutcomeDropped {
		t.Fatalf("outcome %q", got)
	}
}

func TestDropBeforeAnswer(t *testing.T) {
	_, url := start(t, Options{Script: Queue(Reply{Content: "x", Fault: Fault{Drop: true}})})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(conversation(false, user1)))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got an answer (%d) from a dropped request", resp.StatusCode)
	}
}

func TestErrorEventMidStream(t *testing.T) {
	s, url := start(t, Options{Script: Queue(Reply{Content: "one two three", Fault: Fault{StreamError: "out of memory", ErrorAfter: 2}})})
	status, b := post(t, url, conversation(true, user1))
	evs := events(t, b)
	if status != 200 || len(evs) != 3 {
		t.Fatalf("%d %q", status, evs)
	}
	if want := `{"error":{"code":500,"message":"out of memory","type":"server_error"}}`; evs[2] != want {
		t.Fatalf("error event %s, want %s", evs[2], want)
	}
	if got := waitAll(t, s, 1)[0].Outcome; got != OutcomeStreamError {
		t.Fatalf("outcome %q", got)
	}
}

func TestSlowFirstByte(t *testing.T) {
	const delay = 150 * time.Millisecond
	_, url := start(t, Options{Script: Queue(Reply{Content: "x", Fault: Fault{FirstByteDelay: delay}})})
	t0 := time.Now()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(conversation(true, user1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(t0); d < delay {
		t.Fatalf("headers after %v, want at least %v", d, delay)
	}
}

func TestClientGoneFreesSlot(t *testing.T) {
	slow := Reply{Content: strings.Repeat("word ", 200), Fault: Fault{EventDelay: 20 * time.Millisecond}}
	s, url := start(t, Options{Script: Queue(slow, Reply{Content: "next"})})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(conversation(true, user1)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	if got := waitAll(t, s, 1)[0].Outcome; got != OutcomeClientGone {
		t.Fatalf("outcome %q", got)
	}
	if status, b := post(t, url, conversation(false, user1)); status != 200 || !strings.Contains(string(b), `"content":"next"`) {
		t.Fatalf("next request: %d %s", status, b)
	}
}
