package session

import (
	"context"
	"errors"
	"fmt"

	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/prompt"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// Session is one conversation. Everything below sem is touched only by the
// turn that holds sem.
type Session struct {
	id  wire.SessionID
	cfg *Config
	sem chan struct{}

	fresh bool // created by this say: start epoch 0 instead of reading
	ready bool // open succeeded; false again after a failed write

	epoch    wire.Epoch
	slot     uint32
	path     string
	w        *sessionlog.Writer
	sent     *sessionlog.SentWriter
	req      *prompt.Request
	nextCall wire.CallID
	// last is the last answered request of this epoch: the cache
	// accounting's expectation for the next one. Nil means none.
	last *sessionlog.Sent
	// dangling are tool calls of the last assistant record that have no
	// result: a restart cut them off. They are answered before the next
	// request, so the history stays well formed.
	dangling []wire.ToolCall
}

// Interrupted is the result recorded for a call a restart cut off.
const Interrupted = "This call was interrupted: loopd stopped before its result arrived, so whether it ran is unknown."

// open makes the session usable: a new one starts epoch 0, an old one is
// rebuilt from its log.
func (s *Session) open(ctx context.Context) error {
	s.close()
	if s.fresh {
		s.nextCall = 1
		if err := s.startEpoch(0, ""); err != nil {
			return err
		}
		s.fresh = false
		s.ready = true
		return nil
	}
	if err := s.load(ctx); err != nil {
		s.close()
		return err
	}
	s.ready = true
	return nil
}

func (s *Session) close() error {
	s.ready = false
	var err error
	if s.w != nil {
		err = s.w.Close()
		s.w = nil
	}
	if s.sent != nil {
		err = errors.Join(err, s.sent.Close())
		s.sent = nil
	}
	return err
}

// openLog opens the writers of the log at path.
func (s *Session) openLog(path string) error {
	w, err := sessionlog.OpenWriter(path)
	if err != nil {
		return err
	}
	sent, err := sessionlog.OpenSent(path)
	if err != nil {
		w.Close()
		return err
	}
	s.w, s.sent, s.path = w, sent, path
	return nil
}

// write appends rec to the log and then to the request. A failed write
// leaves the session closed, so the next say reads the log again (and
// recovers a torn line) instead of writing after a half-written one.
func (s *Session) write(rec wire.LogRecord) error {
	if err := s.w.Append(rec); err != nil {
		s.close()
		return fmt.Errorf("cannot write the session log: %w", err)
	}
	s.req.Append(rec)
	return nil
}

func (s *Session) now() wire.Timestamp { return wire.TimestampOf(s.cfg.Now()) }

func (s *Session) report(format string, args ...any) {
	s.cfg.Report(fmt.Sprintf("session %s: ", s.id) + fmt.Sprintf(format, args...))
}

// turn runs the owner's message to the model's answer. Every event but
// the last is sent as it happens; the last is reply or failed.
func (s *Session) turn(ctx context.Context, text string, emit Emit) {
	if s.full() {
		if err := s.endEpoch(ctx); err != nil {
			emit(wire.TurnSession{Session: s.id, Epoch: s.epoch})
			emit(wire.TurnFailed{Message: "the context is full and the epoch could not end: " + err.Error()})
			return
		}
	}
	emit(wire.TurnSession{Session: s.id, Epoch: s.epoch})
	fail := func(err error) { emit(wire.TurnFailed{Message: err.Error()}) }
	if err := s.answerDangling(); err != nil {
		fail(err)
		return
	}
	if err := s.write(wire.UserRecord{Time: s.now(), Content: text}); err != nil {
		fail(err)
		return
	}
	for step := 1; step <= s.cfg.MaxSteps; step++ {
		reply, err := s.ask(ctx)
		if le, ok := tooLong(err); ok {
			if step == 1 {
				reply, err = s.refused(ctx, text, le, false)
			} else {
				// The step's tool results were measured to fit, so the
				// estimate was off; the next message finds the epoch
				// full and starts a new one (refused).
				err = fmt.Errorf("the model server refused the request with this step's tool results as longer than its context "+
					"(%d of %d tokens), so this turn stops here; your next message starts a new epoch from a summary; %s",
					le.PromptTokens, le.NCtx, runbook.See("tool-result-too-large"))
			}
		}
		if err != nil {
			fail(err)
			return
		}
		cut := s.cutOf(reply)
		if cut != nil {
			emit(*cut)
		}
		if len(reply.ToolCalls) == 0 {
			emit(wire.TurnReply{Content: deref(reply.Content)})
			return
		}
		if c := deref(reply.Content); c != "" {
			emit(wire.TurnText{Content: c})
		}
		if cut != nil {
			// The calls' arguments were cut off: none is run, and the next
			// request replays the answer without them (prompt).
			fail(fmt.Errorf("the model's answer was cut short in the middle of a tool call, so no call of it was run; "+
				"say something to let it go on; %s", runbook.See("answer-cut")))
			return
		}
		used := 0 // tokens of this step's results so far
		for _, call := range reply.ToolCalls {
			if err := s.runTool(ctx, call, emit, &used); err != nil {
				fail(err)
				return
			}
		}
		if s.full() {
			fail(fmt.Errorf("the context is nearly full (%d of %d tokens), so this turn stops here; your next message starts a new epoch from a summary",
				s.last.Context, s.cfg.NCtx))
			return
		}
	}
	fail(fmt.Errorf("the turn reached its limit of %d model requests without a final answer; say something to let it go on", s.cfg.MaxSteps))
}

// ask sends the request for the history so far and records the answer.
func (s *Session) ask(ctx context.Context) (*llama.Reply, error) {
	if err := s.checkPending(ctx); err != nil {
		return nil, err
	}
	lease, err := s.takeSlot(ctx)
	if err != nil {
		return nil, err
	}
	n := s.req.Len()
	body, sum, size := s.req.Parts(), s.req.Hash(), s.req.Size()
	reply, err := s.cfg.Model.Chat(ctx, body...)
	lease.Release()
	if err != nil {
		return nil, fmt.Errorf("the model failed: %w", err)
	}
	t := reply.Timings
	if s.expects(lease) {
		if want := Expected(*s.last); t.CacheN < want {
			loss := wire.CacheLoss{Time: s.now(), Expected: want, Got: t.CacheN}
			if err := s.write(loss); err != nil {
				return nil, err
			}
			s.report("epoch %d: the server kept %d prompt tokens of the %d expected (a cache loss); %s",
				s.epoch, t.CacheN, want, runbook.See("cache-loss"))
		}
	}
	if cut := s.cutOf(reply); cut != nil {
		// Before the answer, so a rebuild knows to replay it without its
		// cut tool calls; the answer itself is kept as it was generated.
		if err := s.write(wire.AnswerCut{Time: s.now(), Tokens: cut.Tokens, Reason: cut.Reason}); err != nil {
			return nil, err
		}
	}
	rec := wire.AssistantRecord{Time: s.now(), Content: reply.Content,
		ReasoningContent: reply.ReasoningContent, ToolCalls: reply.ToolCalls}
	if rec.ToolCalls == nil {
		rec.ToolCalls = []wire.ToolCall{}
	}
	if err := s.write(rec); err != nil {
		return nil, err
	}
	sent := sessionlog.Sent{Records: n, Bytes: size, Hash: sum, Prompt: t.Prompt(), Context: t.Context(),
		Slot: int(lease.Slot)}
	if err := s.sent.Append(sent); err != nil {
		// The log is whole; only the restart check loses this entry.
		s.report("epoch %d: %v", s.epoch, err)
	}
	s.last = &sent
	return reply, nil
}

// checkPending has the texts rendered since the last check checked before they
// are sent; they stay pending (and unsent) until a check passes.
func (s *Session) checkPending(ctx context.Context) error {
	if s.cfg.Check == nil {
		return nil
	}
	if texts := s.req.Pending(); len(texts) > 0 {
		if err := s.cfg.Check(ctx, texts); err != nil {
			return err
		}
	}
	s.req.Checked()
	return nil
}

// runTool runs one call, records its result and tells the client. A
// result that does not fit the context left (fit; *used counts this
// step's results) is withheld, and the model reads a note instead.
func (s *Session) runTool(ctx context.Context, call wire.ToolCall, emit Emit, used *int) error {
	id := s.nextCall
	s.nextCall++
	tool, args := tools.Describe(call.Name, call.Arguments)
	emit(wire.TurnToolCall{Call: id, Tool: tool, Arguments: args})
	onPending := func(p wire.PendingResponse) {
		emit(wire.TurnApprovalPending{Approval: p.Approval, Tool: tool, Expires: p.Expires})
	}
	out := s.cfg.Tools.Run(ctx, tools.Call{Session: s.id, ID: id, Name: call.Name, Arguments: call.Arguments}, onPending)
	rec := wire.ToolResultRecord{Time: s.now(), Call: id, ToolCallID: call.ID, Content: out.Content,
		Class: out.Class, Untrusted: out.Untrusted, Truncated: out.Truncated}
	tokens, room, fits := s.fit(ctx, out.Content, used)
	if err := s.write(rec); err != nil {
		return err
	}
	if !fits {
		if err := s.withhold(id, call, out, tokens, room, used); err != nil {
			return err
		}
	}
	emit(wire.TurnToolOutcome{Call: id, Tool: tool, Status: out.Status, Reason: out.Reason, Class: out.Class, Truncated: out.Truncated || !fits})
	return nil
}

// answerDangling records Interrupted for every call a restart cut off.
func (s *Session) answerDangling() error {
	for len(s.dangling) > 0 {
		call := s.dangling[0]
		rec := wire.ToolResultRecord{Time: s.now(), Call: s.nextCall, ToolCallID: call.ID,
			Content: Interrupted, Class: wire.Public}
		if err := s.write(rec); err != nil {
			return err
		}
		s.nextCall++
		s.dangling = s.dangling[1:]
	}
	return nil
}

// Expected is how many prompt tokens the server should have kept from the
// request last described: all of that request's prompt and all of the
// answer but its last token. llama-server samples the last token (the
// end-of-turn token, or the one that hit the limit) but never decodes it
// into the slot, so the slot holds prompt + predicted_n - 1 tokens; the next
// request replays the answer as it was returned, so a faithful template
// renders those same tokens again. A template that renders an answer
// differently from how it was generated (one that drops earlier reasoning,
// say) shows up as a loss: real tokens the server computes again.
func Expected(last sessionlog.Sent) uint64 {
	if last.Context > last.Prompt {
		return last.Context - 1
	}
	return last.Prompt
}

// full reports whether the last answer took the context past the epoch's
// limit.
func (s *Session) full() bool {
	return s.cfg.NCtx > 0 && s.last != nil && s.last.Context*100 >= uint64(s.cfg.NCtx)*uint64(s.cfg.EpochPercent)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// ErrNoSession says a say named a session that does not exist.
var ErrNoSession = errors.New("no such session")
