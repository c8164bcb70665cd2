package policy

// Tool is one of the four tools a grant can name. The zero value is not a
// tool, so a forgotten field never means "read_file".
type Tool uint8

const (
	ReadFile Tool = iota + 1
	WriteFile
	Shell
	HTTPFetch
)

var toolNames = [...]string{"", "read_file", "write_file", "shell", "http_fetch"}

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

// Valid reports whether t is one of the four tools.
func (t Tool) Valid() bool { return t >= ReadFile && t <= HTTPFetch }
