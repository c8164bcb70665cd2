package llama

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json"

	"boxmaker/wire"
)

// assembler puts a stream's deltas back together: content and reasoning by
// concatenation; tool calls by their index, the id as given, name and
// arguments by concatenation (a name may come in pieces, arguments always
// do, split wherever the server's tokens fell).
type assembler struct {
	content, reasoning *[]byte
	calls              []*callParts
	finish             string
	timings            *Timings
}

type callParts struct {
	id, name, args []byte
}

type chunk struct {
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Delta        struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int     `json:"index"`
				ID       *string `json:"id"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Timings *struct {
		CacheN     uint64 `json:"cache_n"`
		PromptN    uint64 `json:"prompt_n"`
		PredictedN uint64 `json:"predicted_n"`
	} `json:"timings"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// maxCalls bounds the tool calls of one answer, so a hostile index cannot
// make loopd allocate without limit.
const maxCalls = 64

// line takes one line of the event stream; done is true at [DONE].
func (a *assembler) line(l []byte) (done bool, err error) {
	var payload []byte
	switch {
	case len(l) == 0 || l[0] == ':':
		return false, nil // an event boundary or a comment
	case bytes.HasPrefix(l, []byte("data:")):
		payload = bytes.TrimPrefix(l[len("data:"):], []byte(" "))
	case bytes.HasPrefix(l, []byte("error:")):
		// Older llama-server builds send errors as their own event.
		payload = bytes.TrimPrefix(l[len("error:"):], []byte(" "))
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(payload, &e) != nil || e.Message == "" {
			e.Message = snippet(payload)
		}
		return false, fmt.Errorf("the model server reported an error mid-stream: %s", e.Message)
	default:
		return false, nil // event:, id:, retry: carry nothing for us
	}
	if string(payload) == "[DONE]" {
		return true, nil
	}
	var c chunk
	if err := json.Unmarshal(payload, &c); err != nil {
		return false, fmt.Errorf("the model server sent a chunk that is not JSON: %v", err)
	}
	if c.Error != nil {
		return false, fmt.Errorf("the model server reported an error mid-stream: %s", c.Error.Message)
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		a.content = appendOpt(a.content, d.Content)
		a.reasoning = appendOpt(a.reasoning, d.ReasoningContent)
		for _, tc := range d.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxCalls {
				return false, fmt.Errorf("the model server sent tool call index %d", tc.Index)
			}
			for len(a.calls) <= tc.Index {
				a.calls = append(a.calls, &callParts{})
			}
			p := a.calls[tc.Index]
			if tc.ID != nil && *tc.ID != "" {
				p.id = []byte(*tc.ID)
			}
			if tc.Function.Name != nil {
				p.name = append(p.name, *tc.Function.Name...)
			}
			if tc.Function.Arguments != nil {
				p.args = append(p.args, *tc.Function.Arguments...)
			}
		}
		if ch.FinishReason != nil {
			a.finish = *ch.FinishReason
		}
	}
	if c.Timings != nil {
		a.timings = &Timings{CacheN: c.Timings.CacheN, PromptN: c.Timings.PromptN, PredictedN: c.Timings.PredictedN}
	}
	return false, nil
}

func appendOpt(dst *[]byte, s *string) *[]byte {
	if s == nil {
		return dst
	}
	if dst == nil {
		b := []byte(*s)
		return &b
	}
	*dst = append(*dst, *s...)
	return dst
}

// finished reports whether the answer has its finish reason and timings.
func (a *assembler) finished() bool { return a.finish != "" && a.timings != nil }

func (a *assembler) reply() *Reply {
	r := &Reply{FinishReason: a.finish, Timings: *a.timings}
	if a.content != nil {
		s := string(*a.content)
		r.Content = &s
	}
	if a.reasoning != nil {
		s := string(*a.reasoning)
		r.ReasoningContent = &s
	}
	for _, p := range a.calls {
		r.ToolCalls = append(r.ToolCalls, wire.ToolCall{ID: string(p.id), Name: string(p.name), Arguments: string(p.args)})
	}
	return r
}
