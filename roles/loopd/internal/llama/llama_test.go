package llama

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/wire"
)

// startFake runs a fake llama-server on a Unix socket for the test.
func startFake(t *testing.T, opts fakellama.Options) (*fakellama.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "llama") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "infer.sock")
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
		os.RemoveAll(dir)
	})
	return srv, sock
}

const body = `{"id_slot":0,"cache_prompt":true,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

func client(t *testing.T, sock string) *Client {
	c := New(sock, 2*time.Second, 2*time.Second)
	t.Cleanup(c.Close)
	return c
}

func TestHealthAndProps(t *testing.T) {
	_, sock := startFake(t, fakellama.Options{NCtx: 8192})
	c := client(t, sock)
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := c.NCtx(context.Background()); err != nil || n != 8192 {
		t.Fatalf("n_ctx %d %v", n, err)
	}
	gone := New(filepath.Join(t.TempDir(), "none.sock"), time.Second, time.Second)
	if err := gone.Health(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot reach the model server through infer.sock") {
		t.Fatalf("no server: %v", err)
	}
}

// Tool call arguments split inside escapes, inside multi-byte characters and
// at their very start, and every event written a few bytes at a time, come
// back exactly.
func TestReassembly(t *testing.T) {
	args1 := `{"path":"/home/kyle/nötes/\u00e9t\u00e9 \"quoted\".md","n":[1,2,3]}`
	args2 := `{"url":"https://example.com/?q=ü\\n"}`
	reply := fakellama.Reply{
		Reasoning: "Let me think: ü, \"quotes\", \\ and\nnewlines.",
		Content:   "Reading it — 😀 now.",
		ToolCalls: []fakellama.ToolCall{
			{ID: "call-1", Name: "call_tool", Arguments: args1, Splits: []int{1, 2, 15, 16, 17, 29, 30, 31, 32, 33, len(args1) - 1}},
			{Name: "clock", Arguments: args2, Splits: []int{0, 30, 31, 32}},
		},
	}
	for _, size := range []int{0, 1, 3, 7, 64} {
		reply.Fault.WriteSize = size
		srv, sock := startFake(t, fakellama.Options{Script: fakellama.Queue(reply)})
		got, err := client(t, sock).Chat(context.Background(), []byte(body))
		if err != nil {
			t.Fatalf("write size %d: %v", size, err)
		}
		if got.Content == nil || *got.Content != reply.Content || got.ReasoningContent == nil || *got.ReasoningContent != reply.Reasoning {
			t.Fatalf("write size %d: content %q reasoning %q", size, deref(got.Content), deref(got.ReasoningContent))
		}
		want := []wire.ToolCall{{ID: "call-1", Name: "call_tool", Arguments: args1}, {ID: got.ToolCalls[1].ID, Name: "clock", Arguments: args2}}
		if len(got.ToolCalls) != 2 || got.ToolCalls[0] != want[0] || got.ToolCalls[1] != want[1] || want[1].ID == "" {
			t.Fatalf("write size %d: tool calls\n got %+v\nwant %+v", size, got.ToolCalls, want)
		}
		if got.FinishReason != "tool_calls" {
			t.Fatalf("finish %q", got.FinishReason)
		}
		st := srv.Requests()[0].Chat
		if got.Timings != (Timings{CacheN: uint64(st.CacheN), PromptN: uint64(st.PromptN), PredictedN: uint64(st.PredictedN)}) {
			t.Fatalf("timings %+v, fake %+v", got.Timings, st)
		}
	}
}

func TestNullContent(t *testing.T) {
	_, sock := startFake(t, fakellama.Options{Script: fakellama.Queue(
		fakellama.Reply{ToolCalls: []fakellama.ToolCall{{Name: "clock", Arguments: "{}"}}},
		fakellama.Reply{Content: "plain"})})
	c := client(t, sock)
	got, err := c.Chat(context.Background(), []byte(body))
	if err != nil || got.Content != nil || got.ReasoningContent != nil {
		t.Fatalf("tool-only answer: %+v %v", got, err)
	}
	got, err = c.Chat(context.Background(), []byte(body))
	if err != nil || deref(got.Content) != "plain" || got.ReasoningContent != nil || got.ToolCalls != nil {
		t.Fatalf("plain answer: %+v %v", got, err)
	}
}

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fakellama.Fault
		want  string
	}{
		{"500", fakellama.Fault{Status: 500, Message: "out of memory"}, "the model server answered 500 Internal Server Error: out of memory"},
		{"dropped", fakellama.Fault{Drop: true, DropAfter: 3}, "the model's stream ended before its answer was complete"},
		{"dropped at once", fakellama.Fault{Drop: true}, "the model's stream ended before its answer was complete"},
		{"slow first byte", fakellama.Fault{FirstByteDelay: 5 * time.Second}, "the model did not start answering within 300ms"},
		{"stalled", fakellama.Fault{EventDelay: 5 * time.Second}, "the model stopped sending for 300ms in the middle of its answer"},
		{"error event", fakellama.Fault{StreamError: "slot crashed", ErrorAfter: 2}, "the model server reported an error mid-stream: slot crashed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, sock := startFake(t, fakellama.Options{Script: fakellama.Queue(
				fakellama.Reply{Content: "one two three four", Fault: tc.fault}, fakellama.Reply{Content: "fine"})})
			c := New(sock, 300*time.Millisecond, 300*time.Millisecond)
			defer c.Close()
			start := time.Now()
			_, err := c.Chat(context.Background(), []byte(body))
			var le *Error
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			// The client is usable afterwards.
			got, err := c.Chat(context.Background(), []byte(body))
			if err != nil || deref(got.Content) != "fine" {
				t.Fatalf("next request: %v %v", got, err)
			}
		})
	}
}

func TestContextTooLarge(t *testing.T) {
	_, sock := startFake(t, fakellama.Options{NCtx: 8})
	_, err := client(t, sock).Chat(context.Background(), []byte(body))
	var le *Error
	if !errors.As(err, &le) || le.Status != 400 || !strings.Contains(err.Error(), "exceeds the available context size") {
		t.Fatalf("got %v", err)
	}
	// The server's own numbers, which loopd's refusal reports.
	if !le.ExceedsContext() || le.Type != "exceed_context_size_error" || le.NCtx != 8 || le.PromptTokens < 8 {
		t.Fatalf("context error %+v", le)
	}
	// Another 400 is not a context error.
	other := &Error{What: "the model server answered 400 Bad Request: invalid id_slot", Status: 400}
	if other.ExceedsContext() {
		t.Fatal("a 400 without the context type or message counts as a context error")
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
