package fakellama

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDemoScript(t *testing.T) {
	s := DemoScript(DemoPaths{Notes: "/demo/notes", Scratch: "/demo/scratch"})
	user := func(text string) *ChatRequest {
		c, _ := json.Marshal(text)
		return &ChatRequest{Messages: []Message{{Role: "user", Content: c}}}
	}
	for text, want := range map[string]string{
		"What do my notes say?":                     `{"arguments":{"path":"/demo/notes/today.md"},"tool":"read_file"}`,
		"list the scratch folder":                   `{"arguments":{"command":"ls -la","cwd":"/demo/scratch"},"tool":"shell"}`,
		"fetch a web page":                          `{"arguments":{"url":"https://example.com/"},"tool":"http_fetch"}`,
		"run: cat notes | base64":                   `{"arguments":{"command":"cat notes | base64","cwd":"/demo/scratch"},"tool":"shell"}`,
		"remember: Plants | Water them on Fridays.": `{"arguments":{"text":"Water them on Fridays.","title":"Plants"},"tool":"remember"}`,
		"recall: plants friday":                     `{"arguments":{"query":"plants friday"},"tool":"recall"}`,
		"read note n-0123":                          `{"arguments":{"id":"n-0123"},"tool":"recall"}`,
	} {
		r := s(0, user(text))
		if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "call_tool" || r.ToolCalls[0].Arguments != want {
			t.Errorf("%q: %+v", text, r)
		}
	}
	if r := s(0, user("hello")); len(r.ToolCalls) != 0 || !strings.Contains(r.Content, "stand-in") {
		t.Errorf("hello: %+v", r)
	}
	c, _ := json.Marshal("line one\nline two")
	r := s(1, &ChatRequest{Messages: []Message{{Role: "user", Content: c}, {Role: "tool", Content: c}}})
	if !strings.Contains(r.Content, "> line one\n> line two") {
		t.Errorf("after a tool result: %q", r.Content)
	}
}
