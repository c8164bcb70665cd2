package fakellama

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const sys = `{"role":"system","content":"You are terse."}`
const user1 = `{"role":"user","content":"What time is it?"}`

func TestStreamChunkOrder(t *testing.T) {
	reply := Reply{
		Reasoning: "The user wants the time.",
		Content:   "Let me look.",
		ToolCalls: []ToolCall{
			{Name: "clock", Arguments: `{}`},
			{ID: "given-id", Name: "call_tool", Arguments: `{"tool":"read_file","arguments":{"path":"/tmp/x"}}`},
		},
	}
	_, url := start(t, Options{Script: Queue(reply)})
	status, body := post(t, url, conversation(true, sys, user1))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	evs := events(t, body)

	// Exact bytes of the first chunk: llama-server's key order, compact.
	want0 := `{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],` +
		`"created":1758096300,"id":"chatcmpl-00000000000000000000000000000001","model":"m",` +
		`"system_fingerprint":"b0-fakellama","object":"chat.completion.chunk"}`
	if evs[0] != want0 {
		t.Fatalf("first chunk\n got %s\nwant %s", evs[0], want0)
	}
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", evs[len(evs)-1])
	}

	// Walk the deltas: phases must not go backwards.
	var reasoning, content strings.Builder
	args := map[int]*strings.Builder{}
	names := map[int]string{}
	ids := map[int]string{}
	phase := 0 // 1 reasoning, 2 content, 3 tool calls
	for i, data := range evs[1 : len(evs)-2] {
		c := decode(t, data)
		if c.Choices[0].FinishReason != nil || c.Timings != nil {
			t.Fatalf("delta %d has a finish reason or timings: %s", i+1, data)
		}
		var d struct {
			ReasoningContent *string `json:"reasoning_content"`
			Content          *string `json:"content"`
			ToolCalls        []struct {
				Index    int     `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(c.Choices[0].Delta, &d); err != nil {
			t.Fatal(err)
		}
		next := 0
		switch {
		case d.ReasoningContent != nil:
			next = 1
			reasoning.WriteString(*d.ReasoningContent)
		case d.Content != nil:
			next = 2
			content.WriteString(*d.Content)
		case len(d.ToolCalls) == 1:
			next = 3
			tc := d.ToolCalls[0]
			if _, seen := names[tc.Index]; !seen {
				if tc.ID == nil || tc.Type == nil || *tc.Type != "function" || tc.Function.Name == nil || tc.Function.Arguments != nil {
					t.Fatalf("first delta of tool call %d: %s", tc.Index, data)
				}
				names[tc.Index], ids[tc.Index] = *tc.Function.Name, *tc.ID
				args[tc.Index] = &strings.Builder{}
			} else {
				if tc.ID != nil || tc.Function.Name != nil || tc.Function.Arguments == nil {
					t.Fatalf("later delta of tool call %d: %s", tc.Index, data)
				}
				args[tc.Index].WriteString(*tc.Function.Arguments)
			}
		default:
			t.Fatalf("unexpected delta %s", data)
		}
		if next < phase {
			t.Fatalf("delta %d goes back from phase %d to %d", i+1, phase, next)
		}
		phase = next
	}
	if reasoning.String() != reply.Reasoning || content.String() != reply.Content {
		t.Fatalf("reasoning %q content %q", reasoning.String(), content.String())
	}
	for i, tc := range reply.ToolCalls {
		if names[i] != tc.Name || args[i].String() != tc.Arguments {
			t.Fatalf("tool call %d: %q %q", i, names[i], args[i].String())
		}
	}
	if ids[1] != "given-id" || len(ids[0]) != 32 {
		t.Fatalf("ids %v", ids)
	}

	fin := decode(t, evs[len(evs)-2])
	if fr := fin.Choices[0].FinishReason; fr == nil || *fr != "tool_calls" || string(fin.Choices[0].Delta) != "{}" {
		t.Fatalf("finish chunk %s", evs[len(evs)-2])
	}
	if fin.Timings == nil || fin.Timings.CacheN != 0 || fin.Timings.PromptN == 0 || fin.Timings.PredictedN == 0 {
		t.Fatalf("finish chunk timings %s", evs[len(evs)-2])
	}
	if fin.Usage != nil {
		t.Fatal("usage sent without stream_options.include_usage")
	}
}

func TestStreamUsageChunk(t *testing.T) {
	_, url := start(t, Options{Script: Queue(Reply{Content: "hi"})})
	body := `{"stream":true,"stream_options":{"include_usage":true},"messages":[` + user1 + `]}`
	_, b := post(t, url, body)
	evs := events(t, b)
	fin, usage := decode(t, evs[len(evs)-3]), decode(t, evs[len(evs)-2])
	if *fin.Choices[0].FinishReason != "stop" || fin.Timings != nil || fin.Usage != nil {
		t.Fatalf("finish chunk %s", evs[len(evs)-3])
	}
	if len(usage.Choices) != 0 || usage.Usage == nil || usage.Timings == nil {
		t.Fatalf("usage chunk %s", evs[len(evs)-2])
	}
	if !strings.HasPrefix(evs[len(evs)-2], `{"choices":[],"created":`) {
		t.Fatalf("usage chunk %s", evs[len(evs)-2])
	}
}

func TestArgumentFragments(t *testing.T) {
	args := `{"path":"caf\u00e9 é"}`
	esc := strings.Index(args, `\u00`) + 4 // between \u00 and e9
	mb := strings.Index(args, "é") + 1     // inside é: moves to its end
	got := fragments(args, []int{mb, esc, 0, len(args), esc})
	want := []string{args[:esc], args[esc : mb+1], args[mb+1:]}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("fragments %q, want %q", got, want)
	}
	if got := strings.Join(fragments(args, nil), ""); got != args {
		t.Fatalf("token fragments join to %q", got)
	}
}

func TestNonStreaming(t *testing.T) {
	reply := Reply{Reasoning: "r", Content: "", ToolCalls: []ToolCall{{ID: "c1", Name: "clock", Arguments: "{}"}}}
	_, url := start(t, Options{Script: Queue(reply)})
	status, b := post(t, url, conversation(false, user1))
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	want := `{"choices":[{"finish_reason":"tool_calls","index":0,"message":{"role":"assistant","content":"",` +
		`"reasoning_content":"r","tool_calls":[{"type":"function","function":{"name":"clock","arguments":"{}"},"id":"c1"}]}}],` +
		`"created":1758096300,"model":"m","system_fingerprint":"b0-fakellama","object":"chat.completion",` +
		`"usage":{"completion_tokens":`
	if !strings.HasPrefix(string(b), want) {
		t.Fatalf("answer\n got %s\nwant %s...", b, want)
	}
	if !strings.Contains(string(b), `"prompt_per_second":1000.0,`) {
		t.Fatalf("floats are not written as llama-server writes them: %s", b)
	}
}

func TestWriteSizeSplitsReads(t *testing.T) {
	reply := Reply{Content: "naïve café — ok", ToolCalls: []ToolCall{{ID: "x", Name: "n", Arguments: `{"a":"\u00e9"}`}}}
	_, url := start(t, Options{Script: Queue(reply)})
	_, whole := post(t, url, conversation(true, user1))

	// Pieces of this size end one byte into the "ï" of its delta.
	var size int
	for _, ev := range strings.SplitAfter(string(whole), "\n\n") {
		if i := strings.Index(ev, "ï"); i >= 0 {
			size = i + 1
		}
	}
	split := reply
	split.Fault = Fault{WriteSize: size, EventDelay: time.Millisecond}
	_, url = start(t, Options{Script: Queue(split)})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(conversation(true, user1)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []byte
	reads, cutChar := 0, false
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			reads++
			got = append(got, buf[:n]...)
			cutChar = cutChar || !utf8.Valid(buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != string(whole) {
		t.Fatalf("written in pieces, the stream changed:\n%s\n%s", whole, got)
	}
	if reads <= len(events(t, whole)) || !cutChar {
		t.Fatalf("%d reads for %d bytes, a character cut: %v", reads, len(whole), cutChar)
	}
}
