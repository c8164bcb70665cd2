package podman

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"boxmaker/policy"
	"boxmaker/wire"
)

// The toolkit's protocol is wire.ToolkitRequest and wire.ToolkitResponse:
// one compact JSON request and "\n" on stdin, one answer and "\n" on stdout.
type (
	toolkitRequest  = wire.ToolkitRequest
	toolkitResponse = wire.ToolkitResponse
)

// requestFor is the request line for args, ending in "\n", with the mounts
// the toolkit must find in place before it runs anything.
func requestFor(args policy.Args, outputBytes int64, mounts []wire.ToolkitMount) ([]byte, error) {
	r := toolkitRequest{Tool: args.Tool().String(), OutputBytes: outputBytes, Mounts: mounts}
	switch a := args.(type) {
	case policy.ReadFileArgs:
		r.Path = &a.Path
	case policy.WriteFileArgs:
		r.Path, r.Content = &a.Path, &a.Content
	case policy.ShellArgs:
		r.Command, r.Cwd = &a.Command, a.Cwd
	case policy.HTTPFetchArgs:
		proxy := egressPath
		r.URL, r.Proxy = &a.URL, &proxy
	default:
		return nil, fmt.Errorf("podman: no toolkit request for %T", args)
	}
	return line(r)
}

// probeRequest asks the toolkit what limits it sees.
func probeRequest() []byte {
	b, _ := line(toolkitRequest{Tool: "probe", OutputBytes: 4096})
	return b
}

func line(r toolkitRequest) ([]byte, error) {
	b, err := wire.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("podman: encoding the toolkit request: %w", err)
	}
	return append(b, '\n'), nil
}

// errNoAnswer is a toolkit that ended without a whole answer line.
var errNoAnswer = errors.New("no answer")

// parseAnswer reads the toolkit's one answer line.
func parseAnswer(out []byte) (toolkitResponse, error) {
	line, rest, ok := bytes.Cut(out, []byte("\n"))
	if !ok || len(rest) > 0 || len(line) == 0 {
		return toolkitResponse{}, errNoAnswer
	}
	var r toolkitResponse
	if err := wire.Unmarshal(line, &r); err != nil {
		return toolkitResponse{}, fmt.Errorf("an answer that does not parse: %w", err)
	}
	if r.Status != "result" && r.Status != "failed" {
		return toolkitResponse{}, fmt.Errorf("an answer with status %q", r.Status)
	}
	return r, nil
}

// answerBuffer collects the container's stdout up to a limit, and says
// when a whole line has arrived: the answer is complete then, and brokerd
// need not wait for the container to end.
type answerBuffer struct {
	limit int
	mu    sync.Mutex
	buf   bytes.Buffer
	over  bool
	done  chan struct{} // closed at the first "\n"
	once  sync.Once
}

func newAnswerBuffer(limit int) *answerBuffer {
	return &answerBuffer{limit: limit, done: make(chan struct{})}
}

// errTooLong stops the attach stream when the output is past the limit.
var errTooLong = errors.New("the tool's answer is longer than its limit")

func (a *answerBuffer) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.buf.Len()+len(p) > a.limit {
		a.over = true
		a.once.Do(func() { close(a.done) })
		return 0, errTooLong
	}
	a.buf.Write(p)
	if bytes.IndexByte(p, '\n') >= 0 {
		a.once.Do(func() { close(a.done) })
	}
	return len(p), nil
}

func (a *answerBuffer) bytes() ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return bytes.Clone(a.buf.Bytes()), a.over
}
