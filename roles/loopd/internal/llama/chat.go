package llama

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"boxmaker/wire"
)

// Reply is one streamed answer, reassembled. Content and ReasoningContent
// are nil when the server never sent a string for them, as it returns them.
type Reply struct {
	Content          *string
	ReasoningContent *string
	ToolCalls        []wire.ToolCall
	FinishReason     string
	Timings          Timings
}

// Timings are the server's token counts for the request.
type Timings struct {
	// CacheN prompt tokens came from the slot's cache; PromptN were
	// processed; PredictedN were generated.
	CacheN, PromptN, PredictedN uint64
}

// Prompt is the request's prompt length in tokens.
func (t Timings) Prompt() uint64 { return t.CacheN + t.PromptN }

// Context is the tokens in play after the answer: prompt and answer.
func (t Timings) Context() uint64 { return t.Prompt() + t.PredictedN }

// maxLine bounds one line of the stream; a chunk is a few hundred bytes.
const maxLine = 16 << 20

var (
	errNoStart = errors.New("no answer started in time")
	errStalled = errors.New("the stream stalled")
)

// Chat sends body, the concatenation of its parts, to
// /v1/chat/completions (it must ask for a stream) and reassembles the
// answer. The parts are only ever read (the transport's writer may still be
// reading them after Chat returns), so they must not change afterwards. Any failure is an *Error: a status other than 200,
// a stream that ends before its finish, an error event, or a timeout.
func (c *Client) Chat(ctx context.Context, body ...[]byte) (*Reply, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// One watchdog for the whole exchange: ReplyTimeout until the first
	// event, then IdleTimeout between reads.
	var started atomic.Bool
	dog := time.AfterFunc(c.ReplyTimeout, func() {
		if started.Load() {
			cancel(errStalled)
		} else {
			cancel(errNoStart)
		}
	})
	defer dog.Stop()
	fail := func(what string, err error) error {
		switch context.Cause(ctx) {
		case errNoStart:
			return &Error{What: fmt.Sprintf("the model did not start answering within %s", c.ReplyTimeout)}
		case errStalled:
			return &Error{What: fmt.Sprintf("the model stopped sending for %s in the middle of its answer", c.IdleTimeout)}
		}
		return &Error{What: what, Err: err}
	}

	parts := net.Buffers(slices.Clone(body)) // reading consumes the slice of slices, not the bytes
	var size int64
	for _, p := range body {
		size += int64(len(p))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", &parts)
	if err != nil {
		return nil, &Error{What: "cannot build the request", Err: err}
	}
	req.ContentLength = size
	// A replayable body lets the transport retry on a keep-alive
	// connection the server had just closed.
	req.GetBody = func() (io.ReadCloser, error) {
		b := net.Buffers(slices.Clone(body))
		return io.NopCloser(&b), nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fail("cannot reach the model server through infer.sock", unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, statusError(resp, b)
	}

	var asm assembler
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			if asm.finished() {
				// llama-server ends with [DONE]; an answer whose finish
				// and timings arrived is whole even if that line did not.
				return asm.reply(), nil
			}
			return nil, fail("the model's stream ended before its answer was complete", err)
		}
		if !started.Load() && len(line) > 0 {
			started.Store(true)
		}
		dog.Reset(c.IdleTimeout)
		done, err := asm.line(line)
		if err != nil {
			return nil, &Error{What: err.Error()}
		}
		if done {
			switch {
			case asm.finish == "":
				return nil, &Error{What: "the model's stream ended ([DONE]) without a finish reason"}
			case asm.timings == nil:
				// Without timings there is no cache accounting and no
				// way to know when the context fills.
				return nil, &Error{What: "the model's stream ended ([DONE]) without timings; is this llama-server?"}
			}
			// Read the response to its end before returning: the deferred
			// cancel would otherwise cut the connection while inferproxy
			// still copies the stream's last bytes, cancelling its request
			// to the model server as if loopd had gone away (seen as an
			// occasional cut-off answer on the next request). A well-formed
			// stream has nothing after [DONE] but the chunked terminator.
			_, _ = io.Copy(io.Discard, io.LimitReader(r, 64<<10))
			return asm.reply(), nil
		}
	}
}

// readLine reads one line without its "\n" (or "\r\n").
func readLine(r *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		part, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(part) > maxLine {
				return nil, fmt.Errorf("a line of the stream is longer than %d bytes", maxLine)
			}
			long = append(long, part...)
			continue
		}
		if err != nil {
			// A final line without "\n" is cut short: not a line.
			return nil, err
		}
		if long != nil {
			part = append(long, part...)
		}
		part = bytes.TrimSuffix(part[:len(part)-1], []byte("\r"))
		return part, nil
	}
}
