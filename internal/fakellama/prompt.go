package fakellama

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The fake's "model" has a ChatML-like chat template and a toy tokenizer.
// Neither is llama.cpp's; what matters is that both are deterministic, so
// the prompt cache behaves as llama-server's does: a request that replays
// the history byte for byte (including the assistant fields exactly as they
// were returned) hits the cache through the previous reply, and any change
// in the history costs everything after it.

const (
	imStart = "<|im_start|>"
	imEnd   = "<|im_end|>"
)

// maxWordBytes caps a run of letters and digits at this many bytes per
// token, so long words cost several tokens, as with a subword vocabulary.
const maxWordBytes = 6

// render is the chat template: the text of the prompt for messages and
// tools, ending with the generation prompt for the assistant's turn.
func render(msgs []Message, tools []json.RawMessage) string {
	var b strings.Builder
	rest := msgs
	if len(msgs) > 0 && msgs[0].Role == "system" || len(tools) > 0 {
		b.WriteString(imStart + "system\n")
		if len(msgs) > 0 && msgs[0].Role == "system" {
			b.WriteString(msgs[0].text())
			rest = msgs[1:]
			if len(tools) > 0 {
				b.WriteString("\n\n")
			}
		}
		if len(tools) > 0 {
			b.WriteString("# Tools\n")
			for _, t := range tools {
				b.WriteString(compact(t))
				b.WriteString("\n")
			}
		}
		b.WriteString(imEnd + "\n")
	}
	for _, m := range rest {
		b.WriteString(imStart + m.Role + "\n")
		if m.Role == "assistant" {
			b.WriteString(assistantBody(m.ReasoningContent, m.text(), m.ToolCalls))
		} else if m.Role == "tool" {
			b.WriteString("<tool_response id=" + quote(m.ToolCallID) + ">\n" + m.text() + "\n</tool_response>")
		} else {
			b.WriteString(m.text())
		}
		b.WriteString(imEnd + "\n")
	}
	b.WriteString(imStart + "assistant\n")
	return b.String()
}

// assistantBody is how an assistant turn is written in the prompt; the
// fake "generates" exactly these bytes (plus imEnd) for a reply, so the
// next request's rendering of that reply matches the slot's cache.
func assistantBody(reasoning, content string, calls []ToolCall) string {
	var b strings.Builder
	if reasoning != "" {
		b.WriteString("<think>\n" + reasoning + "\n</think>\n\n")
	}
	b.WriteString(content)
	for _, c := range calls {
		b.WriteString("<tool_call>\n{\"name\": " + quote(c.Name) + ", \"arguments\": " + c.Arguments + "}\n</tool_call>")
	}
	return b.String()
}

func quote(s string) string {
	var b bytes.Buffer
	writeString(&b, s)
	return b.String()
}

// compact renders a tool definition canonically; a definition that is not
// valid JSON is used as it is (the request was already parsed, so it is).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// tokenize splits text into tokens: the two special markers, runs of ASCII
// letters and digits (at most maxWordBytes each), and every other character
// on its own. A newline is always a token boundary, which is what makes the
// tokens of a conversation the tokens of its turns laid end to end.
func tokenize(s string) []string {
	var toks []string
	for len(s) > 0 {
		n := tokenLen(s)
		toks = append(toks, s[:n])
		s = s[n:]
	}
	return toks
}

func tokenLen(s string) int {
	for _, sp := range [...]string{imStart, imEnd} {
		if strings.HasPrefix(s, sp) {
			return len(sp)
		}
	}
	n := 0
	for n < len(s) && n < maxWordBytes && isWordByte(s[n]) {
		n++
	}
	if n > 0 {
		return n
	}
	_, size := utf8.DecodeRuneInString(s)
	return size
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// commonPrefix is the number of leading tokens a and b share.
func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
