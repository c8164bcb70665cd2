package session

import (
	"context"
	"errors"
	"fmt"

	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// What does not fit the model's context (issue 16). The model server is
// the authority on a request's size: it renders the template and tokenizes
// the prompt, and refuses one that does not fit with a 400 that carries the
// prompt's tokens and the context's. loopd asks it to count a single text
// (Config.Tokens, POST /tokenize) only to say how large a refused message
// was, and to measure a tool result that may not fit before it is written.

// messageMargin is the tokens a chat template adds around one message and
// for the generation prompt, with room to spare (Qwen2.5's adds 5 to 12).
const messageMargin = 32

// answerRoom is the context a tool result must leave free for the answer
// that reads it: an eighth of the context, or the answer limit if smaller.
func answerRoom(cfg *Config) int {
	r := cfg.NCtx / 8
	if cfg.MaxAnswerTokens > 0 {
		r = min(r, cfg.MaxAnswerTokens)
	}
	return r
}

// summaryLimit bounds the epoch's summary: summaryTokens, but never more
// than an eighth of the context (so the next epoch's start leaves room for
// a conversation) or the answer limit.
func summaryLimit(cfg *Config) int {
	n := summaryTokens
	if cfg.NCtx > 0 {
		n = min(n, max(cfg.NCtx/8, 16))
	}
	if cfg.MaxAnswerTokens > 0 {
		n = min(n, cfg.MaxAnswerTokens)
	}
	return n
}

// tooLong reports whether err is the server's refusal of a request as
// longer than its context.
func tooLong(err error) (*llama.Error, bool) {
	var le *llama.Error
	return le, errors.As(err, &le) && le.ExceedsContext()
}

// count is text's tokens as the server reads a prompt, or -1 when that
// cannot be known.
func (s *Session) count(ctx context.Context, text string) int {
	if s.cfg.Tokens == nil {
		return -1
	}
	n, err := s.cfg.Tokens(ctx, text)
	if err != nil {
		s.report("epoch %d: cannot count a text's tokens: %v", s.epoch, err)
		return -1
	}
	return n
}

// refused answers the server's refusal of a turn's first request as longer
// than its context. The owner's message, the newest record, is withdrawn (a
// refused record after it), so no later request, and no rebuild after a
// restart, carries it again. Then one of three things is true:
//
//   - the epoch's history fills the context: the request without the
//     message is past the epoch's limit, and the epoch holds more than its
//     start (a turn that failed after its tool results, a restart that lost
//     the .sent file, or an earlier message that a failed request or a
//     crash before its refused record left in the epoch). The epoch ends
//     with a summary and the message goes to the next epoch, once;
//   - the epoch's start alone is past the limit: the context is too small
//     for a conversation, and the owner is told how to fix that;
//   - the message is too long: the owner is told its size and what fits.
//
// The split of the request's size between the message and the rest uses
// the message's own count, so it is off by the template's few tokens
// around the message.
func (s *Session) refused(ctx context.Context, text string, le *llama.Error, again bool) (*llama.Reply, error) {
	rec := wire.RefusedRecord{Time: s.now(), PromptTokens: uint64(max(le.PromptTokens, 0)), NCtx: uint64(max(le.NCtx, 0))}
	if err := s.write(rec); err != nil {
		return nil, err
	}
	nctx := le.NCtx
	if nctx <= 0 {
		nctx = s.cfg.NCtx
	}
	m := s.count(ctx, s.cfg.Neutral.Neutralise(text))
	if m < 0 || le.PromptTokens <= 0 || nctx <= 0 {
		return nil, fmt.Errorf("your message was not sent: the model server refused it as longer than its context (%v); "+
			"it stays in the session log, marked refused, and will not be sent again; send a shorter message; %s",
			le, runbook.See("message-too-long"))
	}
	rest := max(le.PromptTokens-m, 0)
	limit := nctx * s.cfg.EpochPercent / 100
	if rest >= limit {
		history := s.hasHistory()
		switch {
		case history && !again:
			s.report("epoch %d: the request for the owner's message was %d tokens, over the context of %d, because the epoch "+
				"holds about %d; the epoch ends here, and the message goes to the next", s.epoch, le.PromptTokens, nctx, rest)
			if err := s.endEpoch(ctx); err != nil {
				return nil, err
			}
			if err := s.write(wire.UserRecord{Time: s.now(), Content: text}); err != nil {
				return nil, err
			}
			reply, err := s.ask(ctx)
			if le, ok := tooLong(err); ok {
				return s.refused(ctx, text, le, true)
			}
			return reply, err
		case !history:
			return nil, s.startTooLarge(rest, m, nctx, limit)
		}
	}
	fits := max(nctx-rest-answerRoom(&Config{NCtx: nctx, MaxAnswerTokens: s.cfg.MaxAnswerTokens}), 0)
	return nil, fmt.Errorf("your message was not sent: it is about %d tokens, and the request with it would be %d tokens, "+
		"more than the model's context of %d; a message of up to about %d tokens fits now, with room for the answer. "+
		"It stays in the session log, marked refused, and will not be sent again; send a shorter message, or split it; %s",
		m, le.PromptTokens, nctx, fits, runbook.See("message-too-long"))
}

// startTooLarge is the refusal when the epoch's start leaves no room for a
// conversation: a message that fits is answered, but its answer ends the
// epoch, and the next epoch starts as large again.
func (s *Session) startTooLarge(start, m, nctx, limit int) error {
	what := "the system prompt, memory/core.md and the tool definitions"
	if s.epoch > 0 {
		what += fmt.Sprintf(", and the summary of epoch %d", s.epoch-1)
	}
	return fmt.Errorf("epoch %d's start (%s) takes about %d tokens, past the %d at which an epoch ends "+
		"([model] epoch_percent of the model's %d): the context is too small for it, and every answer ends the epoch again. "+
		"Your message (about %d tokens) was not sent; it stays in the session log, marked refused. Give the model a larger "+
		"context (llama-server -c, and [model] n_ctx if set), or shorten memory/core.md or the system prompt, and restart loopd; %s",
		s.epoch, what, start, limit, nctx, m, runbook.See("epoch-start-too-large"))
}

// hasHistory reports whether the request carries anything past the
// epoch's start (SessionStart, and the summary after the first epoch): an
// answer, or a message still live because its request failed for another
// reason or loopd was killed before it wrote the refused record. Only
// such an epoch can be made smaller by ending it; withdrawn records render
// nothing, so they do not count.
func (s *Session) hasHistory() bool {
	start := 1
	if s.epoch > 0 {
		start = 2
	}
	return s.req.Len() > start && len(s.req.BodyAt(start)) < s.req.Size()
}

// fit measures a tool result against the context left after the answer
// that made the call and the results of this step already kept (*used
// tokens), and reports whether it fits with room for the answer; it adds
// what it keeps to *used. Its byte length bounds its tokens (every token is
// at least a byte), so only a result that may not fit costs a count.
func (s *Session) fit(ctx context.Context, content string, used *int) (tokens, room int, ok bool) {
	if s.cfg.NCtx <= 0 || s.last == nil {
		return 0, 0, true
	}
	room = s.cfg.NCtx - int(s.last.Context) - *used - answerRoom(s.cfg) - messageMargin
	text := s.cfg.Neutral.Neutralise(content)
	tokens = len(text)
	if tokens > room {
		if n := s.count(ctx, text); n >= 0 {
			tokens = n
		}
	}
	if tokens > room {
		return tokens, max(room, 0), false
	}
	*used += tokens + messageMargin
	return tokens, room, true
}

// withhold replaces a tool result that does not fit with a note that says
// so: the result stays in the log, withdrawn by a refused record (with
// loopd's measure, not the server's), and the note is what the model
// reads. Refusing it whole, rather than cutting it to fit, keeps the epoch
// where it was: a result cut to fill the context would end the epoch with
// the next answer, and the summary request would no longer fit either.
func (s *Session) withhold(id wire.CallID, call wire.ToolCall, out tools.Outcome, tokens, room int, used *int) error {
	rec := wire.RefusedRecord{Time: s.now(), PromptTokens: s.last.Context + uint64(*used+tokens+messageMargin), NCtx: uint64(s.cfg.NCtx)}
	if err := s.write(rec); err != nil {
		return err
	}
	note := fmt.Sprintf("This result was not given to you: it is about %d tokens long, and only %d tokens of the context "+
		"are left for it. Ask for less: a part of it, or a narrower query.", tokens, room)
	res := wire.ToolResultRecord{Time: s.now(), Call: id, ToolCallID: call.ID, Content: note,
		Class: out.Class, Untrusted: out.Untrusted, Truncated: true}
	if err := s.write(res); err != nil {
		return err
	}
	*used += len(note) + messageMargin
	s.report("epoch %d: the result of tool call %d (about %d tokens) did not fit in the %d tokens of context left, so the model "+
		"was told so instead; %s", s.epoch, id, tokens, room, runbook.See("tool-result-too-large"))
	return nil
}

// cutOf describes an answer the server cut short, or is nil.
func (s *Session) cutOf(reply *llama.Reply) *wire.TurnAnswerCut {
	if reply.FinishReason != "length" {
		return nil
	}
	reason := wire.CutContextFull
	if s.cfg.MaxAnswerTokens > 0 && reply.Timings.PredictedN >= uint64(s.cfg.MaxAnswerTokens) {
		reason = wire.CutAnswerLimit
	}
	return &wire.TurnAnswerCut{Tokens: reply.Timings.PredictedN, Reason: reason}
}
