package tinymodel

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
)

// renderedCall is the tool call as Qwen2.5's template renders it: the text
// a context model must write for the prompt cache to match token by token.
const renderedCall = "<tool_call>\n{\"name\": \"call_tool\", \"arguments\": {\"tool\": \"shell\", \"arguments\": {\"command\": \"id -u\"}}}\n</tool_call>"

// tokenize asks llama-server for its own tokenization of text, special
// tokens included.
func tokenize(t *testing.T, url, text string) []int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content": text, "parse_special": true})
	r, err := http.Post(url+"/tokenize", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var resp struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&resp); err != nil || len(resp.Tokens) == 0 {
		t.Fatalf("tokenize: %d %v", r.StatusCode, err)
	}
	return resp.Tokens
}

func TestRealLlamaContextToolCallAsRendered(t *testing.T) {
	src := llamaSrc(t)
	toks := tokenize(t, serve(t, Options{LlamaSrc: src}), renderedCall)
	seen, repeats := map[int]bool{}, 0
	for _, id := range toks {
		if seen[id] {
			repeats++
		}
		seen[id] = true
	}
	if repeats == 0 {
		t.Fatalf("the rendered call's %d tokens hold no repeat: the test shows nothing", len(toks))
	}
	url := serve(t, Options{LlamaSrc: src, ScriptTokens: toks, AfterTool: afterToolText})
	user := chatMessage{Role: "user", Content: "Who am I?"}

	// Without tools the text comes back as written: exactly the render.
	if msg, _ := chat(t, url, map[string]any{"messages": []chatMessage{user}}); msg.Content != renderedCall {
		t.Fatalf("without tools: %q, want %q", msg.Content, renderedCall)
	}
	msg, finish := chat(t, url, map[string]any{"tools": callToolSchema, "messages": []chatMessage{user}})
	if len(msg.ToolCalls) != 1 || finish != "tool_calls" {
		t.Fatalf("want one parsed tool call, got %+v (finish %q)", msg, finish)
	}
	call := msg.ToolCalls[0]
	if call.Function.Name != "call_tool" || strings.ReplaceAll(call.Function.Arguments, " ", "") != `{"tool":"shell","arguments":{"command":"id-u"}}` {
		t.Errorf("the call is %s %s", call.Function.Name, call.Function.Arguments)
	}
	history := []chatMessage{user,
		{Role: "assistant", ToolCalls: []toolCall{call}},
		{Role: "tool", ToolCallID: call.ID, Content: "0"}}
	msg, finish = chat(t, url, map[string]any{"tools": callToolSchema, "messages": history})
	if msg.Content != afterToolText || len(msg.ToolCalls) != 0 || finish != "stop" {
		t.Errorf("after the tool's answer: %+v (finish %q), want %q", msg, finish, afterToolText)
	}
}

// A context of three tokens that leads to two different next tokens cannot
// be written; the error names the step.
func TestContextAmbiguous(t *testing.T) {
	src := llamaSrc(t)
	x, y, z := 87, 88, 89 // "x" "y" "z"
	_, _, err := build(Options{LlamaSrc: src, ScriptTokens: []int{x, y, z, 90, 92, 93, 94, 95, 96, x, y, z, 90, 92, 93, 94, 95, 96, 91}})
	if err == nil || !strings.Contains(err.Error(), "after the same 8 tokens") {
		t.Fatalf("err = %v", err)
	}
	if _, _, err := build(Options{LlamaSrc: src, ScriptTokens: []int{x, y, z, x, y, 91, x, 90}}); err != nil {
		t.Fatalf("repeats that the context tells apart: %v", err)
	}
}

// A look-back head reads the one token it is meant to: its score at its
// distance beats every other distance within the trained context by 15
// nats at least, for every head size a plan can take.
func TestContextLookBackMargin(t *testing.T) {
	for head := ctxMinHead; head <= ctxMaxHead; head += 2 {
		for b := 1; b <= ctxMaxBack; b++ {
			score := func(d int) float64 {
				var s float64
				for j := range ctxPairs {
					th := math.Pow(ropeBase, -2*float64(j)/float64(head))
					s += math.Cos(float64(d-b) * th)
				}
				return ctxScoreSqr * s
			}
			best := math.Inf(-1)
			for d := range 32768 {
				if d != b {
					best = max(best, score(d))
				}
			}
			if m := score(b) - best; m < 15 {
				t.Fatalf("head %d, %d back: the margin is %.1f nats", head, b, m)
			}
		}
	}
}
