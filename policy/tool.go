package policy

// Tool is one of the tools a grant can name: the four that run in a
// container, and issue 17's remember and recall, which brokerd runs itself. The zero value is not a
// tool, so a forgotten field never means "read_file".
type Tool uint8

const (
	ReadFile Tool = iota + 1
	WriteFile
	Shell
	HTTPFetch
	// Remember and Recall write and read the model's notes (issue 17).
	// They take no constraints: they reach no path, host or secret.
	Remember
	Recall
)

var toolNames = [...]string{"", "read_file", "write_file", "shell", "http_fetch", "remember", "recall"}

// ParseTool maps a tool's wire name to a Tool; ok is false for any other name.
func ParseTool(name string) (t Tool, ok bool) {
	for i := 1; i < len(toolNames); i++ {
		if toolNames[i] == name {
			return Tool(i), true
		}
	}
	return 0, false
}

// String is the tool's wire name, or "" for the zero value.
func (t Tool) String() string {
	if int(t) < len(toolNames) {
		return toolNames[t]
	}
	return ""
}

// Valid reports whether t is one of the tools.
func (t Tool) Valid() bool { return t >= ReadFile && t <= Recall }

// AllTools lists every tool, in declaration order.
func AllTools() []Tool {
	out := make([]Tool, 0, len(toolNames)-1)
	for i := 1; i < len(toolNames); i++ {
		out = append(out, Tool(i))
	}
	return out
}
