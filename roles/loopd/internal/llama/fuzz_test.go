package llama

import (
	"bytes"
	"testing"
)

// Whatever the server sends, the assembler neither panics nor returns an
// answer without its finish reason and timings.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte(`data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}]}` + "\n\n" +
		`data: {"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"clock"}}]}}]}` + "\n\n" +
		`data: {"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}` + "\n\n" +
		`data: {"choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}],"timings":{"cache_n":1,"prompt_n":2,"predicted_n":3}}` + "\n\n" +
		"data: [DONE]\n\n"))
	f.Add([]byte(`error: {"code":500,"message":"x"}` + "\n"))
	f.Add([]byte(`data: {"error":{"code":500,"message":"x"}}` + "\n"))
	f.Add([]byte(`data: {"choices":[{"delta":{"tool_calls":[{"index":99999999999}]}}]}` + "\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		var a assembler
		for _, l := range bytes.Split(stream, []byte("\n")) {
			done, err := a.line(l)
			if err != nil || done {
				break
			}
		}
		if a.finished() {
			r := a.reply()
			if r.FinishReason == "" || len(r.ToolCalls) > maxCalls {
				t.Fatalf("reply %+v", r)
			}
		}
	})
}
