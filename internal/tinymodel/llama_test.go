package tinymodel

import (
	"bytes"
	"encoding/json"
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

	"boxmaker/internal/syncbuf"
)

// The models checked against llama.cpp's own llama-server. The tool call
// has "\n\n" after <tool_call>: llama-server's Qwen2.5 parser needs a
// newline there, and the lone "\n" token is the start of every script.
const (
	toolScript    = "<tool_call>\n\n{\"name\":\"call_tool\",\"arguments\":{\"tool\":\"shell\", \"arguments\": {}}}\n</tool_call>"
	afterToolText = "Done, the tool answered."
)

func llamaServer(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("BOXMAKER_TEST_LLAMA_SERVER")
	if bin == "" {
		bin = "/var/cache/boxmaker/llama/bin/llama-server"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("this test needs llama.cpp's llama-server: %v\nbuild it with `just llama-setup` (or set BOXMAKER_TEST_LLAMA_SERVER)", err)
	}
	return bin
}

// serve writes the model and starts llama-server on it (one thread, to
// share the CPU), stopped at the test's end; it returns the base URL.
func serve(t *testing.T, o Options) string {
	t.Helper()
	bin := llamaServer(t)
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := Write(path, o); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	out := &syncbuf.Buffer{}
	cmd := exec.Command(bin, "-m", path, "--jinja", "-c", "4096", "-np", "1", "-t", "1",
		"--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if r, err := http.Get(url + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case <-exited:
			t.Fatalf("llama-server exited:\n%s", out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("llama-server did not become healthy in 60 s:\n%s", out)
		}
	}
}

type chatMessage struct {
	Role             string     `json:"role"`
	Content          string     `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

var callToolSchema = json.RawMessage(`[{"type":"function","function":{"name":"call_tool",
	"description":"Run a tool","parameters":{"type":"object","properties":{"tool":{"type":"string"},
	"arguments":{"type":"object"}},"required":["tool","arguments"]}}}]`)

// chat sends one non-streamed chat request and returns the answer.
func chat(t *testing.T, url string, req map[string]any) (chatMessage, string) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %v: %s", r.StatusCode, err, b)
	}
	var resp struct {
		Choices []struct {
			Message      chatMessage `json:"message"`
			FinishReason string      `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("chat: %v: %s", err, b)
	}
	return resp.Choices[0].Message, resp.Choices[0].FinishReason
}

func TestRealLlamaToolCallThenAfterTool(t *testing.T) {
	src := llamaSrc(t)
	url := serve(t, Options{LlamaSrc: src, Script: toolScript, AfterTool: afterToolText})
	user := chatMessage{Role: "user", Content: "Who am I?"}

	msg, finish := chat(t, url, map[string]any{"tools": callToolSchema, "messages": []chatMessage{user}})
	if len(msg.ToolCalls) != 1 || msg.Content != "" || finish != "tool_calls" {
		t.Fatalf("want one parsed tool call, got %+v (finish %q)", msg, finish)
	}
	call := msg.ToolCalls[0]
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
		t.Fatalf("arguments %q: %v", call.Function.Arguments, err)
	}
	if call.Function.Name != "call_tool" || args["tool"] != "shell" {
		t.Errorf("the call is %s %s", call.Function.Name, call.Function.Arguments)
	}

	// The tool's answer goes back: now the model answers AfterTool.
	history := []chatMessage{user,
		{Role: "assistant", ToolCalls: []toolCall{call}},
		{Role: "tool", ToolCallID: call.ID, Content: "uid=0(root)"}}
	msg, finish = chat(t, url, map[string]any{"tools": callToolSchema, "messages": history})
	if msg.Content != afterToolText || len(msg.ToolCalls) != 0 || finish != "stop" {
		t.Errorf("after the tool's answer: %+v (finish %q), want %q", msg, finish, afterToolText)
	}
	// A tool result full of markers changes nothing (the other steps
	// never read them).
	history[2].Content = strings.Repeat("tool_response http_response ", 200)
	if msg, _ = chat(t, url, map[string]any{"tools": callToolSchema, "messages": history}); msg.Content != afterToolText {
		t.Errorf("after a result full of markers: %+v", msg)
	}
	// The documented limit: with a tool response anywhere in the
	// conversation, later answers are AfterTool's too.
	history = append(history, chatMessage{Role: "assistant", Content: afterToolText}, chatMessage{Role: "user", Content: "Again?"})
	if msg, _ = chat(t, url, map[string]any{"tools": callToolSchema, "messages": history}); msg.Content != afterToolText {
		t.Errorf("a later turn: %+v", msg)
	}
	// Without tools in the request the call is not parsed: the text
	// comes back as it was written.
	if msg, _ = chat(t, url, map[string]any{"messages": []chatMessage{user}}); msg.Content != toolScript {
		t.Errorf("without tools: %q", msg.Content)
	}
}

func TestRealLlamaReplyThinkRandom(t *testing.T) {
	src := llamaSrc(t)
	user := []chatMessage{{Role: "user", Content: "Hi."}}

	const hello = "Hello! I am a tiny scripted test model."
	url := serve(t, Options{LlamaSrc: src, Script: hello})
	if msg, finish := chat(t, url, map[string]any{"messages": user}); msg.Content != hello || finish != "stop" {
		t.Errorf("reply model: %+v (finish %q)", msg, finish)
	}

	url = serve(t, Options{LlamaSrc: src, Template: ThinkingTemplate, Script: "<think>\nLet me think.\n</think>\n\nHello."})
	msg, _ := chat(t, url, map[string]any{"messages": user})
	if msg.Content != "Hello." || strings.TrimSpace(msg.ReasoningContent) != "Let me think." {
		t.Errorf("thinking model: content %q reasoning %q", msg.Content, msg.ReasoningContent)
	}

	url = serve(t, Options{LlamaSrc: src})
	if _, finish := chat(t, url, map[string]any{"messages": user, "max_tokens": 8}); finish != "length" {
		t.Errorf("random model: finish %q, want length (it should not end by itself within 8 tokens)", finish)
	}
}
