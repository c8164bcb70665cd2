// Package toolkit is the program that runs inside every tool container: the
// four tools (read_file, write_file, shell, http_fetch) and the limits probe
// brokerd runs at startup. It is a hidden role of the boxmaker executable,
// chosen when argv[0] is "toolkit"; brokerd puts the executable into the
// tool image as /bin/toolkit (docs/decisions.md, "The toolkit").
//
// The protocol is one request in, one answer out, so brokerd never has to
// wait for the container's exit status (Podman 4.3 reports it hundreds of
// milliseconds late):
//
//   - stdin: one compact JSON Request, then "\n";
//   - stdout: one compact JSON Response, then "\n", and nothing else;
//     only the toolkit can write there (channel.go);
//   - exit status: 0 for a result, 1 for a failed tool, 2 for a request that
//     could not be read. brokerd reads the Response, not the status.
//
// The toolkit decides nothing: brokerd has already checked the call against
// its grant and given the container only what the grant covers. It must
// not import policy (the gate checks).
package toolkit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"boxmaker/wire"
)

// Request and Response are the protocol brokerd speaks to this program
// (wire/toolkit.go).
type (
	Request  = wire.ToolkitRequest
	Response = wire.ToolkitResponse
)

// Exit statuses.
const (
	exitResult     = 0
	exitFailed     = 1
	exitBadRequest = 2
)

// maxRequest bounds the request line: a frame on broker.sock is at most
// 1 MiB, and escaping can at most double what a write_file's content takes.
const maxRequest = 4 << 20

// Main runs one request from stdin and answers on stdout. args must be
// empty: everything comes on stdin, so nothing of the request shows in the
// container's process list or its Podman configuration.
func Main(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// First of all, before any command of the tool's can exist: make the
	// answer channel the toolkit's alone.
	if err := protectChannel(); err != nil {
		return answer(stdout, stderr, failed("toolkit: "+err.Error()), exitFailed)
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "%s: takes no arguments; it reads one request on stdin (it runs inside tool containers, started by brokerd)\n", name)
		return exitBadRequest
	}
	req, err := readRequest(stdin)
	if err != nil {
		return answer(stdout, stderr, failed("toolkit: "+err.Error()), exitBadRequest)
	}
	if err := checkMounts(req.Mounts); err != nil {
		return answer(stdout, stderr, failed(err.Error()), exitFailed)
	}
	res := run(req)
	code := exitResult
	if res.Status != "result" {
		code = exitFailed
	}
	return answer(stdout, stderr, res, code)
}

func readRequest(r io.Reader) (Request, error) {
	br := bufio.NewReader(io.LimitReader(r, maxRequest+1))
	line, err := br.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return Request{}, fmt.Errorf("reading the request: %w", err)
	}
	if len(line) > maxRequest {
		return Request{}, fmt.Errorf("the request is over %d bytes", maxRequest)
	}
	if len(line) > 0 && line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	var req Request
	if err := wire.Unmarshal(line, &req); err != nil {
		return Request{}, fmt.Errorf("the request does not parse: %w", err)
	}
	if req.OutputBytes <= 0 {
		return Request{}, errors.New("output_bytes must be positive")
	}
	return req, nil
}

// run dispatches to the tool, after checking that the request carries what
// the tool takes and nothing else.
func run(req Request) Response {
	// The optional members: a shell may get a secret file, an http_fetch
	// a header and the proxy's CA (both or neither), and nothing else.
	type need struct{ path, content, command, cwd, url, proxy, header, ca, secret bool }
	var n need
	switch req.Tool {
	case "read_file":
		n = need{path: true}
	case "write_file":
		n = need{path: true, content: true}
	case "shell":
		n = need{command: true, cwd: req.Cwd != nil, secret: req.Secret != nil}
	case "http_fetch":
		n = need{url: true, proxy: true, header: req.Header != nil, ca: req.Header != nil}
	case "probe":
	default:
		return failed(fmt.Sprintf("toolkit: unknown tool %q", req.Tool))
	}
	if (req.Path != nil) != n.path || (req.Content != nil) != n.content || (req.Command != nil) != n.command ||
		(req.Cwd != nil) != n.cwd || (req.URL != nil) != n.url || (req.Proxy != nil) != n.proxy ||
		(req.Header != nil) != n.header || (req.CA != nil) != n.ca || (req.Secret != nil) != n.secret {
		return failed(fmt.Sprintf("toolkit: the request's members do not fit %s", req.Tool))
	}
	switch req.Tool {
	case "read_file":
		return readFile(*req.Path, req.OutputBytes)
	case "write_file":
		return writeFile(*req.Path, *req.Content)
	case "shell":
		env := shellEnv
		if req.Secret != nil {
			if err := writeSecret(*req.Secret); err != nil {
				return failed("toolkit: " + err.Error())
			}
			env = append(slices.Clone(shellEnv), wire.ToolkitSecretEnv+"="+req.Secret.Path)
		}
		return shell(*req.Command, req.Cwd, env, req.OutputBytes)
	case "http_fetch":
		return httpFetch(fetchRequest{url: *req.URL, proxy: *req.Proxy, header: req.Header, ca: req.CA}, req.OutputBytes)
	}
	return probe()
}

// result is an answer of content alone.
func result(text string) Response { return Response{Status: "result", Text: text} }

// failed is a failure; its message is cut to what brokerd takes.
func failed(msg string) Response { return Response{Status: "failed", Text: clip(msg)} }

// answer writes res as the one line on stdout and returns code. If even
// that fails there is nobody left to tell but stderr, which brokerd does
// not read; the missing answer is itself the failure brokerd reports.
func answer(stdout, stderr io.Writer, res Response, code int) int {
	b, err := wire.Marshal(res)
	if err != nil {
		// Text is always valid UTF-8 (see text.go); this is a bug.
		fmt.Fprintf(stderr, "toolkit: cannot encode the answer: %v\n", err)
		return exitFailed
	}
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		fmt.Fprintf(stderr, "toolkit: cannot write the answer: %v\n", err)
		return exitFailed
	}
	return code
}
