package tools

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// The texts of M3a §8, word for word.
func TestDenialTexts(t *testing.T) {
	want := map[wire.DenyReason]string{
		wire.NoGrant:           "Denied: no grant allows this call.",
		wire.GrantExpired:      "Denied: the grant for this call has expired.",
		wire.TaintTooHigh:      "Denied: this session has seen data too sensitive for this call.",
		wire.DeniedByGrant:     "Denied: a grant forbids this call.",
		wire.ApprovalRefused:   "Denied: the owner refused this call.",
		wire.ApprovalExpired:   "Denied: the approval request expired without an answer.",
		wire.InvalidArguments:  "Denied: the arguments are not valid for this tool.",
		wire.GrantsInvalid:     "Denied: the grant files have an error; the owner has been told.",
		wire.AuditUnavailable:  "Denied: the audit log cannot be written; the owner has been told.",
		wire.StateUnreadable:   "Denied: this session's broker state is damaged; the owner has been told.",
		wire.SecretUnavailable: "Denied: a secret this call needs is not available; the owner has been told.",
		wire.UnattendedDenied:  "Denied: this call needs the owner's approval, and this scheduled job's file says to deny such calls rather than ask.",
	}
	for _, r := range wire.AllDenyReasons() {
		if got := DenialText(r); got != want[r] {
			t.Errorf("%s: %q, want %q", r, got, want[r])
		}
		out := FromResponse(wire.DeniedResponse{Reason: r})
		if out.Content != want[r] || out.Class != wire.Public || out.Untrusted || out.Status != wire.ToolDenied || *out.Reason != r {
			t.Errorf("%s: outcome %+v", r, out)
		}
	}
}

func TestCoreJSON(t *testing.T) {
	var defs []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(CoreJSON), &defs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Function.Name)
	}
	if strings.Join(names, ",") != "clock,find_tool,call_tool" {
		t.Fatalf("core tools %v", names)
	}
	var registered []string
	for _, tool := range Registry {
		if !json.Valid([]byte(tool.Schema)) {
			t.Errorf("%s: schema is not JSON", tool.Name)
		}
		registered = append(registered, tool.Name)
	}
	// The registry's order is find_tool's: new tools are appended.
	if got := strings.Join(registered, ","); got != "read_file,write_file,shell,http_fetch,remember,recall" {
		t.Errorf("registry %s", got)
	}
}

// TestMemoryToolSchemas: remember's and recall's schemas name exactly the
// members policy's argument parser takes, with the same required ones.
func TestMemoryToolSchemas(t *testing.T) {
	type schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		OneOf      []struct {
			Required []string `json:"required"`
		} `json:"oneOf"`
		Additional *bool `json:"additionalProperties"`
	}
	for _, tc := range []struct {
		name, props, required, oneOf string
	}{
		{"remember", "id,text,title", "title,text", ""},
		{"recall", "id,query", "", "query|id"},
	} {
		tool, ok := lookup(tc.name)
		if !ok {
			t.Fatalf("%s is not in the registry", tc.name)
		}
		var s schema
		if err := json.Unmarshal([]byte(tool.Schema), &s); err != nil {
			t.Fatal(err)
		}
		var props, one []string
		for p := range s.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		for _, o := range s.OneOf {
			one = append(one, strings.Join(o.Required, ","))
		}
		if strings.Join(props, ",") != tc.props || strings.Join(s.Required, ",") != tc.required ||
			strings.Join(one, "|") != tc.oneOf || s.Additional == nil || *s.Additional {
			t.Errorf("%s: properties %v, required %v, oneOf %v, additionalProperties %v", tc.name, props, s.Required, one, s.Additional)
		}
	}
}

type fakePort struct {
	got  []wire.ToolRequest
	resp []wire.ToolResponse
}

func (p *fakePort) Call(_ context.Context, req wire.ToolRequest, onPending func(wire.PendingResponse)) wire.ToolResponse {
	p.got = append(p.got, req)
	onPending(wire.PendingResponse{Approval: 41, Expires: 1})
	r := p.resp[0]
	p.resp = p.resp[1:]
	return r
}

func TestCallTool(t *testing.T) {
	sess, _ := wire.NewSessionID("chat-1")
	port := &fakePort{resp: []wire.ToolResponse{
		wire.ResultResponse{Content: "notes", Class: wire.Private, Untrusted: true, Truncated: true},
		wire.FailedResponse{Message: "no such file"},
	}}
	r := &Runner{Port: port}
	var pending []wire.PendingResponse
	on := func(p wire.PendingResponse) { pending = append(pending, p) }
	args := `{"tool":"read_file","arguments":{ "path": "/home/kyle/notes/a.md" }}`
	out := r.Run(context.Background(), Call{Session: sess, ID: 7, Name: CallTool, Arguments: args}, on)
	want := wire.ToolRequest{Session: sess, Call: 7, Tool: "read_file", Arguments: `{ "path": "/home/kyle/notes/a.md" }`}
	if len(port.got) != 1 || port.got[0] != want {
		t.Fatalf("request %+v", port.got)
	}
	if out.Content != "notes" || out.Class != wire.Private || !out.Untrusted || !out.Truncated || out.Status != wire.ToolResult {
		t.Fatalf("outcome %+v", out)
	}
	if len(pending) != 1 || pending[0].Approval != 41 {
		t.Fatalf("pending %+v", pending)
	}
	out = r.Run(context.Background(), Call{Session: sess, ID: 8, Name: CallTool, Arguments: args}, on)
	if out.Content != "no such file" || out.Status != wire.ToolFailed {
		t.Fatalf("failed outcome %+v", out)
	}
	if tool, a := Describe(CallTool, args); tool != "read_file" || a != want.Arguments {
		t.Fatalf("Describe: %s %s", tool, a)
	}
}

func TestWithoutPortAndBadCalls(t *testing.T) {
	sess, _ := wire.NewSessionID("chat-1")
	r := &Runner{Now: func() time.Time { return time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC) }}
	run := func(name, args string) Outcome {
		return r.Run(context.Background(), Call{Session: sess, ID: 1, Name: name, Arguments: args}, func(wire.PendingResponse) {})
	}
	for _, tc := range []struct{ name, args, want string }{
		{CallTool, `{"tool":"shell","arguments":{"command":"ls"}}`, NoBroker},
		{CallTool, `{"tool":"rm_rf","arguments":{}}`, `there is no tool named "rm_rf"`},
		{CallTool, `{"tool":"shell","arguments":"ls"}`, `"arguments" must be an object`},
		{CallTool, `{"tool":"shell","arguments":{},"Tool":"x"}`, "call_tool takes"},
		{CallTool, `not json`, "call_tool takes"},
		{"shell", `{"command":"ls"}`, "shell is not called directly"},
		{"nope", `{}`, `there is no tool named "nope"`},
		{FindTool, `{"q":1}`, "find_tool takes"},
	} {
		out := run(tc.name, tc.args)
		if out.Status != wire.ToolFailed || !strings.Contains(out.Content, tc.want) || out.Class != wire.Public {
			t.Errorf("%s %s: %+v", tc.name, tc.args, out)
		}
	}
	if out := run(Clock, `{}`); out.Content != "2026-09-17T08:05:00.000Z (Thursday, UTC)" || out.Status != wire.ToolResult {
		t.Errorf("clock: %+v", out)
	}
	out := run(FindTool, `{"query":"fetch a web page"}`)
	if !strings.HasPrefix(out.Content, "http_fetch: ") || !strings.Contains(out.Content, `"url"`) {
		t.Errorf("find_tool: %q", out.Content)
	}
	out = run(FindTool, `{"query":""}`)
	for _, tool := range Registry {
		if !strings.Contains(out.Content, tool.Name+": ") {
			t.Errorf("find_tool all: %q lacks %s", out.Content, tool.Name)
		}
	}
	if out := run(FindTool, `{"query":"zzz"}`); !strings.HasPrefix(out.Content, `No tool matches "zzz"`) {
		t.Errorf("find_tool none: %q", out.Content)
	}
}
