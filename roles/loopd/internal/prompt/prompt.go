// Package prompt builds the body of a chat completion request from a
// session's log records, deterministically: the same records always give
// the same bytes, so a restarted loopd sends exactly what it sent before and
// the server's prompt cache is hit in full.
//
// The body is laid out so that history is only ever appended:
//
//	{"id_slot":S,"cache_prompt":true,"stream":true,"tools":[…],"messages":[{system},M1,…,Mn],"max_tokens":N}
//
// Everything up to the system message is the head, fixed for an epoch but
// for id_slot, which changes when loopd moves the session to another of
// the server's slots (SetSlot). The generation settings after the messages
// ("max_tokens", the answer limit) are the end: they are sent with every
// request (Parts) but are no part of the conversation, so Body, BodyAt and
// Hash, which the .sent side file records and a restart compares, end the
// messages with "]}" instead, and a changed limit is not taken for a
// changed history. The bytes from "tools" through the system message are
// the prompt prefix; their
// SHA-256 is the epoch's baseline (SessionStart.baseline). Each record that
// the model reads renders to one message, kept in memory; a new record
// renders once and is appended, so building a request never re-reads the
// log and never re-renders old records.
//
// Text from outside the prefix (the owner's messages, the model's own
// fields and tool results) passes through the prefix's neutral.Set (the
// served model's special tokens and the fixed floor) on its way into the
// body; the records themselves keep the original. Each text so rendered is
// also kept as pending until the session has had the model server check it
// (Pending, Checked), so none is sent unchecked.
package prompt

import (
	"crypto/sha256"
	"hash"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"boxmaker/roles/loopd/internal/neutral"
	"boxmaker/wire"
)

// Prefix is what the model reads before any history: fixed for an epoch.
type Prefix struct {
	// System is the system prompt.
	System string
	// Core is memory/core.md.
	Core string
	// Tools is the JSON array of tool definitions offered to the model.
	Tools []byte
	// Neutral neutralises text from outside the prefix; nil is
	// neutral.Floor(). It is no part of the prefix's bytes.
	Neutral *neutral.Set
	// MaxTokens, when positive, is sent as max_tokens with every request:
	// the answer limit. It is no part of the prefix's bytes either.
	MaxTokens int
}

// CoreHeading introduces core memory inside the system message.
const CoreHeading = "\n\n# Core memory (memory/core.md)\n\n"

// render is the prefix's bytes: `"tools":[…],"messages":[{system}`.
func (p Prefix) render() []byte {
	b := append([]byte(`"tools":`), p.Tools...)
	b = append(b, `,"messages":[{"role":"system","content":`...)
	b = appendString(b, p.System+CoreHeading+p.Core)
	return append(b, '}')
}

// Baseline is the SHA-256 of the prefix's bytes as they appear in the body.
func (p Prefix) Baseline() wire.Hash32 { return wire.Sha256(p.render()) }

// Request is the rendered request of one epoch, grown one record at a time.
type Request struct {
	buf  []byte // the head and every rendered message, each after a comma
	head int    // len(buf) before any record
	ends []int  // len(buf) after each record appended
	// sum has hashed buf so far, so hashing a body costs only its tail.
	sum    hash.Hash
	summed int
	set    *neutral.Set
	// pending are the neutralised texts appended since Checked; mark is
	// how many there were before the last record was appended, so a
	// withdrawn record takes its own texts with it.
	pending []string
	mark    int
	// end closes every request sent: "]}", or the generation settings.
	end []byte
	// cut says the last record was an AnswerCut: the assistant record
	// after it is rendered without its tool calls.
	cut bool
	// slot is the id_slot the head names; buf[:slotEnd] ends with it.
	slot    uint32
	slotEnd int
}

// New starts an epoch's request for slot with prefix p.
func New(slot uint32, p Prefix) *Request {
	b := append([]byte(`{"id_slot":`), strconv.FormatUint(uint64(slot), 10)...)
	slotEnd := len(b)
	b = append(b, `,"cache_prompt":true,"stream":true,`...)
	b = append(b, p.render()...)
	set := p.Neutral
	if set == nil {
		set = neutral.Floor()
	}
	end := closing
	if p.MaxTokens > 0 {
		end = strconv.AppendInt([]byte(`],"max_tokens":`), int64(p.MaxTokens), 10)
		end = append(end, '}')
	}
	return &Request{buf: b, head: len(b), sum: sha256.New(), set: set, end: end, slot: slot, slotEnd: slotEnd}
}

// text neutralises s for the body and keeps the result as pending.
func (r *Request) text(s string) string {
	n := r.set.Neutralise(s)
	if n != "" {
		r.pending = append(r.pending, n)
	}
	return n
}

// arguments neutralises a tool call's arguments for the body, as the
// server will read them: llama-server decodes a JSON arguments text before
// rendering it for templates that take object arguments, so the strings it
// decodes are what is neutralised (neutral.NeutraliseJSON), and each joins
// the JSON text as pending, so the check before sending tokenizes the
// decoded keys and values as well as the text. Arguments that are not valid
// JSON are neutralised as plain text, as the server leaves them (or
// refuses the request); their escapes decoded (neutral.Literal) are checked
// too, so a disagreement between loopd's JSON parser and the server's
// fails closed rather than letting an escaped marker through.
func (r *Request) arguments(s string) string {
	out, strs, ok := r.set.NeutraliseJSON(s)
	if !ok {
		out = r.set.Neutralise(s)
		if lit := neutral.Literal(out); lit != out {
			strs = []string{lit}
		}
	}
	if out != "" {
		r.pending = append(r.pending, out)
	}
	for _, t := range strs {
		if t != "" {
			r.pending = append(r.pending, t)
		}
	}
	return out
}

// Pending are the texts, as neutralised, appended since the last Checked:
// what must be checked before the next request is sent.
func (r *Request) Pending() []string { return r.pending }

// Checked says that Pending passed the check.
func (r *Request) Checked() { r.pending, r.mark = nil, 0 }

// Append renders rec and adds it. Records the model does not read
// (SessionStart, CacheLoss, EpochEnd, AnswerCut) add nothing but still
// count; a RefusedRecord withdraws the record before it; an assistant
// record after an AnswerCut is rendered without its tool calls, whose
// arguments were cut off (llama-server refuses a request whose arguments
// are not JSON).
func (r *Request) Append(rec wire.LogRecord) {
	cut := r.cut
	_, r.cut = rec.(wire.AnswerCut)
	if _, ok := rec.(wire.RefusedRecord); ok {
		r.withdraw()
		r.ends = append(r.ends, len(r.buf))
		return
	}
	r.mark = len(r.pending)
	if v, ok := rec.(wire.AssistantRecord); ok && cut {
		v.ToolCalls = nil
		rec = v
	}
	switch v := rec.(type) {
	case wire.UserRecord:
		r.buf = append(r.buf, `,{"role":"user","content":`...)
		r.buf = appendString(r.buf, r.text(v.Content))
		r.buf = append(r.buf, '}')
	case wire.AssistantRecord:
		r.buf = r.appendAssistant(r.buf, v)
	case wire.ToolResultRecord:
		r.buf = append(r.buf, `,{"role":"tool","tool_call_id":`...)
		r.buf = appendString(r.buf, r.text(v.ToolCallID))
		r.buf = append(r.buf, `,"content":`...)
		r.buf = appendString(r.buf, r.text(v.Content))
		r.buf = append(r.buf, '}')
	}
	r.ends = append(r.ends, len(r.buf))
}

// withdraw takes back the last record's message: the server refused the
// request that carried it, so no request carries it again. The record
// still counts, rendering nothing, so BodyAt stays true for every earlier
// request. The buffer is clipped rather than overwritten in place, because
// the transport may still be reading the refused request's parts, and the
// running hash starts again if it had read past the cut. Only a record
// appended since the last request can be refused, so this happens once per
// refusal and costs one copy of the history.
func (r *Request) withdraw() {
	if len(r.ends) == 0 {
		return
	}
	start := r.head
	if n := len(r.ends); n > 1 {
		start = r.ends[n-2]
	}
	r.buf = r.buf[:start:start]
	r.ends[len(r.ends)-1] = start
	if r.summed > start {
		r.sum.Reset()
		r.summed = 0
	}
	if r.mark <= len(r.pending) {
		r.pending = r.pending[:r.mark]
	}
}

// appendAssistant writes the fields as the server returned them: content
// (null stays null), reasoning_content when the server sent one, and
// tool_calls when there are any.
func (r *Request) appendAssistant(b []byte, v wire.AssistantRecord) []byte {
	b = append(b, `,{"role":"assistant","content":`...)
	b = r.appendOptString(b, v.Content)
	if v.ReasoningContent != nil {
		b = append(b, `,"reasoning_content":`...)
		b = r.appendOptString(b, v.ReasoningContent)
	}
	if len(v.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range v.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendString(b, r.text(c.ID))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, r.text(c.Name))
			b = append(b, `,"arguments":`...)
			b = appendString(b, r.arguments(c.Arguments))
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// closing ends every body; shared, never written.
var closing = []byte("]}")

// Parts is the request to send as two pieces, without copying the history:
// the history so far, which later appends never change (they write only
// past its end, or into a new array), and the end: "]}", or the generation
// settings and "}". Sending these instead of Body() keeps the per-request
// cost of a long session to the socket write.
func (r *Request) Parts() [][]byte {
	return [][]byte{r.buf[:len(r.buf):len(r.buf)], r.end}
}

// Size is len(Body()): the conversation's bytes, as .sent records them.
func (r *Request) Size() int { return len(r.buf) + len(closing) }

// Len is the number of records appended.
func (r *Request) Len() int { return len(r.ends) }

// Body is the conversation of every record appended so far: the request
// as sent, but closed with "]}" in place of the generation settings.
func (r *Request) Body() []byte { return r.BodyAt(len(r.ends)) }

// BodyAt is Body as it was when only the first n records were appended:
// what loopd sent at that point, but for the generation settings.
func (r *Request) BodyAt(n int) []byte {
	end := r.head
	if n > 0 {
		end = r.ends[n-1]
	}
	out := make([]byte, 0, end+2)
	out = append(out, r.buf[:end]...)
	return append(out, "]}"...)
}

// Hash is the SHA-256 of Body(), computed from a running hash of the
// history, so it does not grow with the session.
func (r *Request) Hash() wire.Hash32 {
	r.sum.Write(r.buf[r.summed:])
	r.summed = len(r.buf)
	h, err := r.sum.(hash.Cloner).Clone()
	if err != nil {
		// sha256 always clones; hash the whole body rather than guess.
		return wire.Sha256(r.Body())
	}
	h.Write([]byte("]}"))
	var out wire.Hash32
	copy(out[:], h.Sum(nil))
	return out
}

// SummaryBody is the request that asks for the epoch's summary: the whole
// history, then instruction as a user message, with the answer bounded by
// maxTokens. The prefix is unchanged, so the request still hits the cache.
func (r *Request) SummaryBody(instruction string, maxTokens int) []byte {
	out := make([]byte, 0, len(r.buf)+len(instruction)+64)
	out = append(out, r.buf...)
	out = append(out, `,{"role":"user","content":`...)
	out = appendString(out, instruction)
	out = append(out, `}],"max_tokens":`...)
	out = strconv.AppendInt(out, int64(maxTokens), 10)
	return append(out, '}')
}

func (r *Request) appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, r.text(*s))
}

// appendString writes s as a JSON string. Invalid UTF-8 cannot occur (every
// string came through a strict decoder); jsontext would replace it.
func appendString(b []byte, s string) []byte {
	out, _ := jsontext.AppendQuote(b, s)
	return out
}

// Slot is the id_slot the request names.
func (r *Request) Slot() uint32 { return r.slot }

// SetSlot makes the request name slot instead: loopd moved the session to
// another of the server's slots. The history is copied into a new buffer,
// since bodies handed out by Parts may still be read, and the running hash
// starts again; both happen once per move, which costs the server far more
// (a cache miss) than it costs here.
func (r *Request) SetSlot(slot uint32) {
	if slot == r.slot {
		return
	}
	b := append([]byte(`{"id_slot":`), strconv.FormatUint(uint64(slot), 10)...)
	delta := len(b) - r.slotEnd
	b = append(make([]byte, 0, cap(r.buf)+delta), b...)
	b = append(b, r.buf[r.slotEnd:]...)
	r.buf, r.slot, r.slotEnd = b, slot, r.slotEnd+delta
	r.head += delta
	for i := range r.ends {
		r.ends[i] += delta
	}
	r.sum, r.summed = sha256.New(), 0
}
