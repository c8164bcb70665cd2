package fakellama

import (
	"encoding/json"
	"errors"
	"strings"
)

// ChatRequest is the part of a /v1/chat/completions request the fake reads.
// Like llama-server, it ignores fields it does not know.
type ChatRequest struct {
	Model    string
	Messages []Message
	// Tools holds each tool definition as it was sent.
	Tools  []json.RawMessage
	Stream bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// IDSlot is id_slot; -1 (llama-server's default) and absent mean slot 0.
	IDSlot int
	// CachePrompt is cache_prompt (default true).
	CachePrompt bool
	// MaxTokens is max_tokens (or its aliases n_predict and
	// max_completion_tokens; n_predict wins, as in llama-server); 0 and
	// -1 mean no limit.
	MaxTokens int
}

// Message is one message of the conversation.
type Message struct {
	Role string
	// Content is the message's content: a string, null, or an array of
	// {"type":"text","text":...} parts.
	Content          json.RawMessage
	ReasoningContent string
	ToolCalls        []ToolCall
	ToolCallID       string
	Name             string
}

// text is the message's content as the template sees it: a string as it
// is, text parts joined by newlines, null as "".
func (m Message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.Text
	}
	return strings.Join(texts, "\n")
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []wireToolCall  `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Name             string          `json:"name"`
}

type wireRequest struct {
	Model         string            `json:"model"`
	Messages      []wireMessage     `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	Stream        bool              `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IDSlot      *int  `json:"id_slot"`
	CachePrompt *bool `json:"cache_prompt"`
	MaxTokens   *int  `json:"max_tokens"`
	MaxCompl    *int  `json:"max_completion_tokens"`
	NPredict    *int  `json:"n_predict"`
}

// parseChat reads a chat completion request. The fake is a stand-in for a
// foreign server, so it decodes as leniently as llama-server does; the
// strict decoding of boxmaker's own protocol lives in wire.
func parseChat(body []byte) (*ChatRequest, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, err
	}
	if w.Messages == nil {
		return nil, errors.New("'messages' is required")
	}
	req := &ChatRequest{Model: w.Model, Tools: w.Tools, Stream: w.Stream,
		IncludeUsage: w.StreamOptions.IncludeUsage, CachePrompt: true}
	if w.IDSlot != nil && *w.IDSlot >= 0 {
		req.IDSlot = *w.IDSlot
	}
	if w.CachePrompt != nil {
		req.CachePrompt = *w.CachePrompt
	}
	for _, n := range []*int{w.MaxTokens, w.MaxCompl, w.NPredict} {
		if n != nil {
			req.MaxTokens = max(*n, 0)
		}
	}
	for _, m := range w.Messages {
		if m.Role == "" {
			return nil, errors.New("missing 'role' in message")
		}
		msg := Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent,
			ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			args := string(tc.Function.Arguments)
			// Arguments are a JSON string in the OpenAI format; llama-server
			// also takes an object and uses its dump.
			var s string
			if json.Unmarshal(tc.Function.Arguments, &s) == nil {
				args = s
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}
