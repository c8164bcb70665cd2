package wire

import "fmt"

// The toolkit's protocol: brokerd's Podman runtime writes one compact
// ToolkitRequest and "\n" to the tool program's stdin inside the container
// (roles/toolkit), which answers with one ToolkitResponse and "\n" on
// stdout. Both sides use these types; fixtures/toolkit holds examples that
// each side's tests read.

// ToolkitRequest is one tool run. Members a tool does not take are null.
type ToolkitRequest struct {
	Tool    string  `json:"tool"`
	Path    *string `json:"path"`
	Content *string `json:"content"`
	Command *string `json:"command"`
	Cwd     *string `json:"cwd"`
	URL     *string `json:"url"`
	// Proxy is the egress proxy's Unix socket inside the container
	// (http_fetch only).
	Proxy *string `json:"proxy"`
	// OutputBytes caps the content of the answer (Text), in bytes. brokerd
	// asks for a few bytes more than it passes on, so that it sees for
	// itself whether the content was longer than its cap.
	OutputBytes int64 `json:"output_bytes"`
	// Mounts are the host objects brokerd checked and mounted, by path in
	// the container: the toolkit refuses to run unless each path is that
	// very object (docs/decisions.md, "Mount sources").
	Mounts []ToolkitMount `json:"mounts"`
	// Header is one header http_fetch adds to every request: a grant's
	// secret_header, whose value holds the call's placeholder, never the
	// secret (the egress proxy puts the secret in on its way out).
	Header *ToolkitHeader `json:"header"`
	// CA is a PEM certificate in the container that http_fetch trusts
	// besides the system's roots: the call's egress proxy's own CA, for the
	// hosts where the proxy puts the secret in.
	CA *string `json:"ca"`
	// Secret is a secret the tool must hold itself (a shell grant's
	// secret_deliver = "file"): the toolkit writes it to Path, on the tmpfs
	// brokerd mounted for it, before the command runs. It travels only
	// here, on the container's stdin: never in argv, the environment or
	// anything Podman keeps.
	Secret *ToolkitSecret `json:"secret"`
}

// ToolkitHeader is one HTTP request header.
type ToolkitHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ToolkitSecret is a secret delivered as a file. Value is any bytes
// (base64 in the JSON).
type ToolkitSecret struct {
	Path  string `json:"path"`
	Value []byte `json:"value"`
}

// String, GoString and Format print the path alone, so that no log line,
// error or %v of a request can show the value.
func (s ToolkitSecret) String() string                { return "secret file " + s.Path }
func (s ToolkitSecret) GoString() string              { return s.String() }
func (s ToolkitSecret) Format(f fmt.State, verb rune) { fmt.Fprint(f, s.String()) }

// ToolkitMount is one mount as brokerd checked it on the host: the object
// with this device and inode number, at Path.
type ToolkitMount struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// ToolkitResponse is the answer. Status is "result" or "failed". Text is
// the content of a result (at most the request's OutputBytes, cut at a
// character) or the message of a failure. Head and Tail are the toolkit's
// own notes before and after a result's content (an HTTP status line, a
// shell's exit status, what was withheld as binary); both are "" for a
// failure. There is no truncated flag: brokerd decides that from the
// length of Text (docs/decisions.md, "The toolkit's answer channel").
type ToolkitResponse struct {
	Status string `json:"status"`
	Head   string `json:"head"`
	Text   string `json:"text"`
	Tail   string `json:"tail"`
}

// ToolkitNoteBytes bounds a Head, a Tail and a failure's Text: brokerd
// refuses an answer with a longer one, and the toolkit cuts its notes to
// fit.
const ToolkitNoteBytes = 16 << 10

// ToolkitSecretDir is where, in a tool container, a secret delivered as a
// file lives: a tmpfs of its own that brokerd mounts for the call, owned by
// the tool's user. ToolkitSecretEnv names the variable that gives a shell
// command the file's path (the path, never the value).
const (
	ToolkitSecretDir = "/run/boxmaker/secret"
	ToolkitSecretEnv = "BOXMAKER_SECRET_FILE"
)
