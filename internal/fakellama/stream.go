package fakellama

import (
	"bytes"
	"net/http"
)

// event is one server-sent event; last marks the end of one of
// llama-server's writes (it writes the first token's events together, and
// the finish and usage chunks together).
type event struct {
	data []byte
	last bool
}

func sse(v any) []byte {
	var b bytes.Buffer
	b.WriteString("data: ")
	writeValue(&b, v)
	b.WriteString("\n\n")
	return b.Bytes()
}

func (a *answer) chunk(choices []object, extra ...field) object {
	o := object{
		{"choices", choices},
		{"created", a.created},
		{"id", a.id},
		{"model", a.model},
		{"system_fingerprint", buildInfo},
		{"object", "chat.completion.chunk"},
	}
	return append(o, extra...)
}

func (a *answer) delta(d object) []byte {
	return sse(a.chunk([]object{{{"finish_reason", nil}, {"index", 0}, {"delta", d}}}))
}

// events is the stream in llama-server's order: the role chunk, reasoning
// deltas, content deltas, for each tool call a delta with its id and name
// and then its argument fragments, the finish chunk (and the usage chunk
// when asked for) with the timings on the last, and [DONE].
func (a *answer) events() []event {
	var deltas [][]byte
	for _, t := range tokenize(a.reply.Reasoning) {
		deltas = append(deltas, a.delta(object{{"reasoning_content", t}}))
	}
	for _, t := range tokenize(a.reply.Content) {
		deltas = append(deltas, a.delta(object{{"content", t}}))
	}
	for i, c := range a.calls {
		deltas = append(deltas, a.delta(object{{"tool_calls", []object{{
			{"index", i}, {"id", c.ID}, {"type", "function"},
			{"function", object{{"name", c.Name}}},
		}}}}))
		for _, frag := range fragments(c.Arguments, c.Splits) {
			deltas = append(deltas, a.delta(object{{"tool_calls", []object{{
				{"index", i}, {"function", object{{"arguments", frag}}},
			}}}}))
		}
	}

	// The first token's write carries the role chunk and that token's delta.
	evs := []event{{data: a.delta(object{{"role", "assistant"}, {"content", nil}}), last: len(deltas) == 0}}
	for _, d := range deltas {
		evs = append(evs, event{data: d, last: true})
	}
	finish := a.chunk([]object{{{"finish_reason", a.finishReason()}, {"index", 0}, {"delta", object{}}}})
	if a.usage {
		evs = append(evs, event{data: sse(finish)})
		finish = a.chunk([]object{}, field{"usage", a.usageObject()})
	}
	finish = append(finish, field{"timings", a.timings()})
	evs = append(evs, event{data: sse(finish), last: true})
	return append(evs, event{data: []byte("data: [DONE]\n\n"), last: true})
}

// stream writes the answer as server-sent events, applying the reply's
// faults; it reports whether the whole stream was written.
func (s *Server) stream(w *recWriter, r *http.Request, rec *Request, a *answer) bool {
	f := a.reply.Fault
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	started := false
	// put writes p, pausing before every write but the first, and flushes
	// when asked; it reports whether the client is still there.
	put := func(p []byte, flush bool) bool {
		if started && flush && !s.sleep(r.Context(), f.EventDelay) {
			return false
		}
		if _, err := w.Write(p); err != nil {
			return false
		}
		if flush {
			started = true
			return rc.Flush() == nil
		}
		return true
	}
	for i, ev := range a.events() {
		if f.Drop && i == f.DropAfter {
			_ = rc.Flush() // what was written before the cut reaches the client
			s.setOutcome(rec, OutcomeDropped)
			panic(http.ErrAbortHandler)
		}
		if f.StreamError != "" && i == f.ErrorAfter {
			put(sse(object{{"error", errorBody(http.StatusInternalServerError, f.StreamError)}}), true)
			s.setOutcome(rec, OutcomeStreamError)
			return false
		}
		ok := true
		if f.WriteSize > 0 {
			for p := ev.data; ok && len(p) > 0; {
				n := min(f.WriteSize, len(p))
				ok = put(p[:n], true)
				p = p[n:]
			}
		} else {
			ok = put(ev.data, ev.last)
		}
		if !ok {
			s.setOutcome(rec, OutcomeClientGone)
			return false
		}
	}
	return true
}
