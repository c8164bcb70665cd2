package tools

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"boxmaker/wire"
)

// ToolPort carries call_tool's requests to whatever runs tools. Call blocks
// until the final answer; a PendingResponse (the call waits for the owner's
// approval) is passed to onPending as it arrives, before Call returns, and
// is never returned.
// A port reports its own trouble as a FailedResponse ("the tool broker is
// unavailable"), so Call has no error: the model reads what went wrong and
// the turn goes on (M3a §8). ctx ends when the turn is abandoned.
type ToolPort interface {
	Call(ctx context.Context, req wire.ToolRequest, onPending func(wire.PendingResponse)) wire.ToolResponse
}

// NoBroker is the message every non-core call gets without a port.
const NoBroker = "no tool broker is configured"

// Outcome is a finished tool call: what the model reads (Content), and what
// the log and the owner's client are told about it.
type Outcome struct {
	Content   string
	Status    wire.ToolStatus
	Reason    *wire.DenyReason
	Class     wire.DataClass
	Untrusted bool
	Truncated bool
}

// Runner runs the model's tool calls: the core tools itself, anything else
// through Port.
type Runner struct {
	// Port is nil when no broker is configured.
	Port ToolPort
	// Now is the clock tool's time source (time.Now when nil).
	Now func() time.Time
}

// Call is one tool call the model made.
type Call struct {
	Session   wire.SessionID
	ID        wire.CallID
	Name      string
	Arguments string
}

// Describe is the tool and arguments the owner's client is shown for a
// call: for call_tool, the tool it names and that tool's arguments, when
// they can be read; otherwise the call as the model made it.
func Describe(name, arguments string) (string, string) {
	if name == CallTool {
		if a, err := parseCallTool(arguments); err == nil {
			return a.Tool, string(a.Arguments)
		}
	}
	return name, arguments
}

// Run runs c and returns its outcome; it never fails, since every failure
// is something the model should read.
func (r *Runner) Run(ctx context.Context, c Call, onPending func(wire.PendingResponse)) Outcome {
	switch c.Name {
	case Clock:
		now := time.Now
		if r.Now != nil {
			now = r.Now
		}
		t := now().UTC()
		return local(fmt.Sprintf("%s (%s, UTC)", wire.TimestampOf(t), t.Weekday()))
	case FindTool:
		var a struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal([]byte(c.Arguments), &a, json.RejectUnknownMembers(true)); err != nil {
			return failed(`find_tool takes {"query": "<words>"}: ` + err.Error())
		}
		return local(find(a.Query))
	case CallTool:
		a, err := parseCallTool(c.Arguments)
		if err != nil {
			return failed(`call_tool takes {"tool": "<name>", "arguments": {…}}: ` + err.Error())
		}
		if _, ok := lookup(a.Tool); !ok {
			return failed(fmt.Sprintf("there is no tool named %q; find_tool lists the tools", a.Tool))
		}
		if r.Port == nil {
			return failed(NoBroker)
		}
		req := wire.ToolRequest{Session: c.Session, Call: c.ID, Tool: a.Tool, Arguments: string(a.Arguments)}
		return FromResponse(r.Port.Call(ctx, req, onPending))
	}
	if _, ok := lookup(c.Name); ok {
		return failed(fmt.Sprintf("%s is not called directly: use call_tool with {\"tool\": %q, \"arguments\": {…}}", c.Name, c.Name))
	}
	return failed(fmt.Sprintf("there is no tool named %q; the tools are clock, find_tool and call_tool", c.Name))
}

// FromResponse turns the port's answer into what the model reads.
func FromResponse(resp wire.ToolResponse) Outcome {
	switch v := resp.(type) {
	case wire.ResultResponse:
		return Outcome{Content: v.Content, Status: wire.ToolResult, Class: v.Class, Untrusted: v.Untrusted, Truncated: v.Truncated}
	case wire.FailedResponse:
		// The broker's words about a tool that failed: private, since a
		// tool's error can quote what it read.
		return Outcome{Content: v.Message, Status: wire.ToolFailed, Class: wire.Private}
	case wire.DeniedResponse:
		reason := v.Reason
		return Outcome{Content: DenialText(reason), Status: wire.ToolDenied, Reason: &reason, Class: wire.Public}
	case wire.PendingResponse:
		return failed("the tool broker answered with a pending approval as its final answer")
	}
	return failed("the tool broker gave no answer")
}

type callToolArgs struct {
	Tool      string         `json:"tool"`
	Arguments jsontext.Value `json:"arguments"`
}

// parseCallTool reads call_tool's arguments; the inner arguments stay the
// model's own bytes (only brokerd's policy parses them), but must be an
// object.
func parseCallTool(s string) (callToolArgs, error) {
	var a callToolArgs
	if err := json.Unmarshal([]byte(s), &a, json.RejectUnknownMembers(true)); err != nil {
		return a, err
	}
	if a.Tool == "" {
		return a, fmt.Errorf("missing \"tool\"")
	}
	if a.Arguments.Kind() != '{' {
		return a, fmt.Errorf("\"arguments\" must be an object")
	}
	return a, nil
}

// find lists the tools whose name or description holds a word of query,
// best match first; an empty query (or one nothing matches) lists all.
func find(query string) string {
	words := strings.Fields(strings.ToLower(query))
	type hit struct {
		t     Tool
		score int
	}
	var hits []hit
	for _, t := range Registry {
		text := strings.ToLower(t.Name + " " + strings.ReplaceAll(t.Name, "_", " ") + " " + t.Description)
		score := 0
		for _, w := range words {
			if strings.Contains(text, w) {
				score++
			}
		}
		if score > 0 || len(words) == 0 {
			hits = append(hits, hit{t, score})
		}
	}
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "No tool matches %q. Every tool:\n", query)
		for _, t := range Registry {
			hits = append(hits, hit{t, 0})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	for _, h := range hits {
		fmt.Fprintf(&b, "%s: %s\n  arguments: %s\n", h.t.Name, h.t.Description, h.t.Schema)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// local is an answer loopd wrote itself: public, trusted.
func local(content string) Outcome {
	return Outcome{Content: content, Status: wire.ToolResult, Class: wire.Public}
}

func failed(msg string) Outcome {
	return Outcome{Content: msg, Status: wire.ToolFailed, Class: wire.Public}
}
