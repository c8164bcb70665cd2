package fakellama

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
)

// Fake speeds behind the timings: 1 ms per prompt token, 20 ms per
// generated token. The timings are computed, never measured, so tests that
// compare them are deterministic.
const (
	promptMsPerToken    = 1.0
	predictedMsPerToken = 20.0
)

// answer is everything needed to write one completion, streamed or not.
type answer struct {
	id, model string
	created   int64
	reply     Reply
	calls     []ToolCall // reply.ToolCalls with their ids filled in
	stats     ChatStats
	usage     bool // stream_options.include_usage
}

func (s *Server) chat(w *recWriter, r *http.Request, rec *Request, body []byte) {
	req, err := parseChat(body)
	if err != nil {
		// llama-server turns a parse exception into a 500 server_error.
		writeError(w, http.StatusInternalServerError, "Failed to parse request: "+err.Error())
		return
	}
	s.mu.Lock()
	call := s.calls
	s.calls++
	s.mu.Unlock()
	reply := s.opts.Script(call, req)
	f := reply.Fault
	if f.Status != 0 {
		writeError(w, f.Status, f.Message)
		return
	}
	if req.IDSlot >= len(s.slots) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid id_slot %d: the server has %d slots", req.IDSlot, len(s.slots)))
		return
	}
	prompt := tokenize(render(req.Messages, req.Tools))
	if len(prompt) >= s.opts.NCtx {
		writeContextError(w, len(prompt), s.opts.NCtx)
		return
	}

	sl := s.slots[req.IDSlot]
	waited := !sl.mu.TryLock()
	if waited {
		sl.mu.Lock()
	}
	defer sl.mu.Unlock()
	cacheN := 0
	if req.CachePrompt {
		cacheN = commonPrefix(sl.tokens, prompt)
		// llama-server evaluates at least the prompt's last token, because
		// it needs that token's logits to start generating.
		if cacheN == len(prompt) {
			cacheN--
		}
	}
	a := &answer{
		id:      fmt.Sprintf("chatcmpl-%032d", call+1),
		model:   s.opts.Model,
		created: s.opts.Now().Unix(),
		reply:   reply,
		calls:   withIDs(call, reply.ToolCalls),
		usage:   req.IncludeUsage,
	}
	if req.Model != "" {
		a.model = req.Model
	}
	// The slot then holds the prompt and, once the reply is whole, the
	// tokens generated after it: exactly how the next request renders this
	// reply when it replays it unchanged.
	gen := tokenize(assistantBody(reply.Reasoning, reply.Content, a.calls) + imEnd)
	a.reply, gen = cut(a.reply, gen, s.opts.NCtx-len(prompt), req.MaxTokens)
	a.stats = ChatStats{Slot: req.IDSlot, Waited: waited, PromptTokens: len(prompt), CacheN: cacheN,
		PromptN: len(prompt) - cacheN, PredictedN: len(gen)}
	s.setChat(rec, a.stats)
	sl.tokens = prompt

	if !s.sleep(r.Context(), f.FirstByteDelay) {
		s.setOutcome(rec, OutcomeClientGone)
		return
	}
	if !req.Stream {
		if f.Drop {
			s.setOutcome(rec, OutcomeDropped)
			panic(http.ErrAbortHandler)
		}
		writeJSON(w, http.StatusOK, a.completion())
		sl.tokens = slices.Concat(prompt, gen)
		return
	}
	if s.stream(w, r, rec, a) {
		sl.tokens = slices.Concat(prompt, gen)
	}
}

// cut stops a reply as llama-server stops generating: after max tokens
// (max_tokens), or when the slot's context is full (room tokens), with
// finish_reason "length" and no end-of-turn token. Only a plain content
// reply is cut (at a token boundary, so the cut content tokenizes to the
// tokens generated and a replay still hits the cache); a script that wants
// another kind of cut answer sets Finish itself.
func cut(r Reply, gen []string, room, maxTokens int) (Reply, []string) {
	limit := room
	if maxTokens > 0 {
		limit = min(limit, maxTokens)
	}
	if len(gen) <= limit || r.Reasoning != "" || len(r.ToolCalls) > 0 || limit < 0 {
		return r, gen
	}
	r.Content = strings.Join(gen[:limit], "")
	r.Finish = "length"
	return r, gen[:limit]
}

// withIDs fills in the ids the script left empty, deterministically, in
// llama-server's shape (32 letters and digits).
func withIDs(call int, calls []ToolCall) []ToolCall {
	out := slices.Clone(calls)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = fmt.Sprintf("fake%024d%04d", call+1, i)
		}
	}
	return out
}

func (a *answer) finishReason() string {
	switch {
	case a.reply.Finish != "":
		return a.reply.Finish
	case len(a.calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// completion is the whole answer when not streaming.
func (a *answer) completion() object {
	msg := object{{"role", "assistant"}, {"content", a.reply.Content}}
	if a.reply.Reasoning != "" {
		msg = append(msg, field{"reasoning_content", a.reply.Reasoning})
	}
	if len(a.calls) > 0 {
		var tcs []object
		for _, c := range a.calls {
			tcs = append(tcs, object{
				{"type", "function"},
				{"function", object{{"name", c.Name}, {"arguments", c.Arguments}}},
				{"id", c.ID},
			})
		}
		msg = append(msg, field{"tool_calls", tcs})
	}
	return object{
		{"choices", []object{{{"finish_reason", a.finishReason()}, {"index", 0}, {"message", msg}}}},
		{"created", a.created},
		{"model", a.model},
		{"system_fingerprint", buildInfo},
		{"object", "chat.completion"},
		{"usage", a.usageObject()},
		{"id", a.id},
		{"timings", a.timings()},
	}
}

func (a *answer) usageObject() object {
	st := a.stats
	return object{
		{"completion_tokens", st.PredictedN},
		{"prompt_tokens", st.PromptTokens},
		{"total_tokens", st.PredictedN + st.PromptTokens},
		{"prompt_tokens_details", object{{"cached_tokens", st.CacheN}}},
	}
}

func (a *answer) timings() object {
	st := a.stats
	promptMs := float64(st.PromptN) * promptMsPerToken
	predictedMs := float64(st.PredictedN) * predictedMsPerToken
	return object{
		{"cache_n", st.CacheN},
		{"prompt_n", st.PromptN},
		{"prompt_ms", promptMs},
		{"prompt_per_token_ms", promptMsPerToken},
		{"prompt_per_second", 1e3 / promptMsPerToken},
		{"predicted_n", st.PredictedN},
		{"predicted_ms", predictedMs},
		{"predicted_per_token_ms", predictedMsPerToken},
		{"predicted_per_second", 1e3 / predictedMsPerToken},
	}
}

// fragments cuts a tool call's arguments where the script asked, or at
// token boundaries.
func fragments(args string, splits []int) []string {
	if args == "" {
		return nil
	}
	if splits == nil {
		return tokenize(args)
	}
	cuts := slices.Sorted(slices.Values(splits))
	var out []string
	prev := 0
	for _, c := range cuts {
		for c > 0 && c < len(args) && !utf8.RuneStart(args[c]) {
			c++ // never half a character: llama-server holds it back
		}
		if c <= prev || c >= len(args) {
			continue
		}
		out = append(out, args[prev:c])
		prev = c
	}
	return append(out, args[prev:])
}
