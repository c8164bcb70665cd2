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

// requestFor is the request for args, its line ending in "\n", with the
// mounts the toolkit must find in place before it runs anything, and the
// call's secret (nil: none).
func requestFor(args policy.Args, outputBytes int64, mounts []wire.ToolkitMount, sec *callSecret) (request, error) {
	r := toolkitRequest{Tool: args.Tool().String(), OutputBytes: askFor(outputBytes), Mounts: mounts}
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
		return request{}, fmt.Errorf("podman: no toolkit request for %T", args)
	}
	sec.addTo(&r)
	b, err := line(r)
	return request{line: b, cap: outputBytes}, err
}

// probeRequest asks the toolkit what limits it sees.
func probeRequest() request {
	const cap = 4096
	b, _ := line(toolkitRequest{Tool: "probe", OutputBytes: askFor(cap)})
	return request{line: b, cap: cap}
}

func line(r toolkitRequest) ([]byte, error) {
	b, err := wire.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("podman: encoding the toolkit request: %w", err)
	}
	return append(b, '\n'), nil
}

// answerBuffer collects the container's stdout up to a limit, and says
// when a whole line has arrived: the answer is complete then, and brokerd
// need not wait for the toolkit to end (it does wait for the container to
// be removed; see run).
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
