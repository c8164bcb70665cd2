package fakellama

import (
	"fmt"
	"time"
)

// Script chooses the reply to a chat completion request. call counts the
// chat completion requests the server has had, from 0; req is the parsed
// request. A test scripts a conversation with Queue, or writes a Script
// that looks at the request (the last tool result, say) and answers it.
type Script func(call int, req *ChatRequest) Reply

// Queue answers the n-th chat completion request with replies[n]. A request
// past the end gets an HTTP 500 in llama-server's error format, so a
// conversation that goes on longer than the test expected fails loudly.
func Queue(replies ...Reply) Script {
	return func(call int, _ *ChatRequest) Reply {
		if call < len(replies) {
			return replies[call]
		}
		return Reply{Fault: Fault{Status: 500,
			Message: fmt.Sprintf("fakellama: the script has no reply for chat request %d", call)}}
	}
}

// Reply is one scripted assistant turn.
type Reply struct {
	// Reasoning is sent as reasoning_content, before Content.
	Reasoning string
	Content   string
	ToolCalls []ToolCall
	// Finish is the finish_reason; "" means "tool_calls" when there are
	// tool calls and "stop" otherwise.
	Finish string
	// Fault, when set, makes the reply misbehave.
	Fault Fault
}

// ToolCall is one call the model makes.
type ToolCall struct {
	// ID is the call's id; "" lets the fake make one up (deterministically).
	ID        string
	Name      string
	Arguments string
	// Splits are the byte offsets in Arguments at which streamed argument
	// fragments end; nil splits at token boundaries. A split inside a
	// multi-byte UTF-8 character moves to the character's end, because
	// llama-server holds back an incomplete character until it is whole; a
	// split inside a \uXXXX escape stays where it is.
	Splits []int
}

// Fault is what can go wrong with a reply. The zero Fault is none.
type Fault struct {
	// Status, when non-zero, answers with this HTTP status and an error
	// body in llama-server's format ({"error":{"code":...}}), carrying
	// Message, before anything is streamed.
	Status  int
	Message string

	// FirstByteDelay waits this long before the response starts.
	FirstByteDelay time.Duration
	// EventDelay waits this long before each streamed write after the
	// first: a slow tail.
	EventDelay time.Duration
	// WriteSize, when positive, writes each streamed event in pieces of at
	// most this many bytes, flushing after each (with EventDelay between
	// them), so a client's reads end inside a "data: " prefix, a multi-byte
	// character or an escape.
	WriteSize int

	// Drop, after DropAfter streamed events (or at once when not
	// streaming), cuts the connection without ending the response.
	Drop      bool
	DropAfter int

	// StreamError, after ErrorAfter streamed events, sends llama-server's
	// mid-stream error event (data: {"error":{...}}) with this message and
	// ends the stream without [DONE].
	StreamError string
	ErrorAfter  int
}

// defaultScript answers every request with a short greeting, for demos.
func defaultScript(int, *ChatRequest) Reply {
	return Reply{Content: "Hello from fakellama."}
}
