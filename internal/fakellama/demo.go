package fakellama

import (
	"encoding/json"
	"strings"
)

// DemoPaths are the folders the demo's grants name.
type DemoPaths struct {
	Notes   string // an ask grant for read_file
	Scratch string // an auto grant for shell
}

// DemoScript is the stand-in model of the demo: it answers like a model
// that uses tools, by simple rules, so a newcomer sees a tool call, an
// approval, a container run and a denial without a real model.
//
//   - a message that starts "run: ": shell of the rest in the scratch
//     folder, as a model would run whatever a page it read told it to
//   - "remember: <title> | <text>": remember a note with that title and
//     text (issue 17); "recall: <words>": recall the notes that match;
//     "read note <id>": recall that note
//   - "notes" in the owner's message: read_file of the notes folder's today.md
//   - "scratch" or "list": shell "ls -la" in the scratch folder
//   - "fetch" or "web": http_fetch of https://example.com/ (no grant: denied)
//   - after a tool result: a reply quoting it
//   - anything else: a reply saying what it can do
func DemoScript(p DemoPaths) Script {
	return func(call int, req *ChatRequest) Reply {
		if len(req.Messages) == 0 {
			return Reply{Content: "No messages."}
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return Reply{Content: "The tool answered:\n\n" + quoteLines(last.text()) +
				"\n\n(I am the demo's scripted stand-in model, not a real one.)"}
		}
		if command, ok := strings.CutPrefix(last.text(), "run: "); ok {
			return callTool("shell", map[string]string{"command": command, "cwd": p.Scratch})
		}
		if note, ok := strings.CutPrefix(last.text(), "remember: "); ok {
			title, text, _ := strings.Cut(note, " | ")
			return callTool("remember", map[string]string{"title": title, "text": text})
		}
		if words, ok := strings.CutPrefix(last.text(), "recall: "); ok {
			return callTool("recall", map[string]string{"query": words})
		}
		if id, ok := strings.CutPrefix(last.text(), "read note "); ok {
			return callTool("recall", map[string]string{"id": id})
		}
		text := strings.ToLower(last.text())
		switch {
		case strings.Contains(text, "notes"):
			return callTool("read_file", map[string]string{"path": p.Notes + "/today.md"})
		case strings.Contains(text, "scratch"), strings.Contains(text, "list"):
			return callTool("shell", map[string]string{"command": "ls -la", "cwd": p.Scratch})
		case strings.Contains(text, "fetch"), strings.Contains(text, "web"):
			return callTool("http_fetch", map[string]string{"url": "https://example.com/"})
		}
		return Reply{Content: "I am the demo's scripted stand-in model. Ask me to read your notes, " +
			"list the scratch folder, or fetch a web page."}
	}
}

func callTool(tool string, args map[string]string) Reply {
	inner, _ := json.Marshal(args)
	outer, _ := json.Marshal(map[string]any{"tool": tool, "arguments": json.RawMessage(inner)})
	return Reply{Reasoning: "The owner asked for something " + tool + " can do.",
		ToolCalls: []ToolCall{{Name: "call_tool", Arguments: string(outer)}}}
}

func quoteLines(s string) string {
	s = strings.TrimRight(s, "\n")
	return "> " + strings.ReplaceAll(s, "\n", "\n> ")
}
