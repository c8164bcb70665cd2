package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"boxmaker/roles/loopd/internal/prompt"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// load rebuilds the session from its latest epoch's log: the same records
// render the same request bytes that were sent before, so the server's
// cache still holds them. Along the way it recovers a torn final line,
// completes an epoch change a crash interrupted, and checks the rebuilt
// request against the .sent entry.
func (s *Session) load(ctx context.Context) error {
	epochs, err := s.epochs()
	if err != nil {
		return err
	}
	if len(epochs) == 0 {
		// The directory was made but no record written: start afresh.
		s.nextCall = 1
		return s.startEpoch(0, "")
	}
	n := epochs[len(epochs)-1]
	path := sessionlog.Path(s.cfg.Home, s.id, n)
	log, err := s.read(path)
	if err != nil {
		return err
	}
	recs := log.Records
	if err := s.check(path, n, log); err != nil {
		return err
	}
	if s.nextCall, err = s.callsFrom(n, recs); err != nil {
		return err
	}
	switch {
	case len(recs) == 0:
		// A crash between creating the file and its first record.
		summary, err := s.summaryBefore(n)
		if err != nil {
			return err
		}
		return s.startEpoch(n, summary)
	case isEpochEnd(recs[len(recs)-1]):
		// A crash between ending the epoch and starting the next.
		return s.startEpoch(n+1, recs[len(recs)-1].(wire.EpochEnd).Summary)
	}
	start := recs[0].(wire.SessionStart)
	p, err := Prefix(s.cfg)
	if err != nil {
		return err
	}
	if b := p.Baseline(); b != start.Baseline {
		s.report("epoch %d: the prompt prefix (system prompt, memory/core.md or the tool schemas) changed since the epoch began "+
			"(baseline %s, now %s); the epoch goes on with the new prefix, and the server's cache misses once; %s",
			n, start.Baseline, b, runbook.See("session-rebuild-differs"))
	}
	s.epoch, s.slot, s.path = n, start.Slot, path
	s.req = prompt.New(s.slot, p)
	for _, r := range recs {
		s.req.Append(r)
	}
	s.verifySent()
	s.dangling = dangling(recs)
	if err := s.openLog(path); err != nil {
		return err
	}
	if n > 0 && !hasSummary(recs) {
		summary, err := s.summaryBefore(n)
		if err != nil {
			return err
		}
		return s.write(wire.UserRecord{Time: s.now(), Content: SummaryMessage(n-1, summary)})
	}
	return ctx.Err()
}

// epochs lists the epoch numbers that have a log, in order.
func (s *Session) epochs() ([]wire.Epoch, error) {
	err := sessionlog.CheckDir(s.cfg.Home, s.id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoSession, s.id)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read session %s: %w", s.id, err)
	}
	entries, err := os.ReadDir(sessionlog.Dir(s.cfg.Home, s.id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoSession, s.id)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read session %s: %w", s.id, err)
	}
	var out []wire.Epoch
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(stem, 10, 32)
		if err != nil || strconv.FormatUint(v, 10) != stem {
			continue
		}
		out = append(out, wire.Epoch(v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// read reads a log, closing a torn final line the way the audit log does.
func (s *Session) read(path string) (*sessionlog.Log, error) {
	log, err := sessionlog.Read(path)
	if err != nil {
		return nil, err
	}
	if log.Torn != nil {
		if err := sessionlog.Recover(path, *log.Torn); err != nil {
			return nil, err
		}
		s.report("kept a torn final line of %s (%s), which a crash cut short, and continued after it; %s",
			path, log.Torn, runbook.See("session-log-torn"))
	}
	return log, nil
}

// check refuses a log whose records are not in a possible order.
func (s *Session) check(path string, epoch wire.Epoch, log *sessionlog.Log) error {
	for i, r := range log.Records {
		bad := func(what string) error { return &sessionlog.DamagedError{Path: path, Line: log.Lines[i], What: what} }
		switch v := r.(type) {
		case wire.SessionStart:
			if i != 0 {
				return bad("session_start after the first record")
			}
			if v.Session != s.id || v.Epoch != epoch {
				return bad(fmt.Sprintf("session_start names session %s epoch %d", v.Session, v.Epoch))
			}
		case wire.RefusedRecord:
			// It withdraws the record before it, which must be one a
			// request carries and loopd can take back.
			switch prev := log.Records[max(i-1, 0)].(type) {
			case wire.UserRecord, wire.ToolResultRecord:
			default:
				return bad(fmt.Sprintf("refused follows %T, not a user message or a tool result", prev))
			}
		case wire.AnswerCut:
			// It describes the assistant record after it. A crash between
			// the two leaves it without one, and the session then goes on
			// with what a turn starts with: a user message, or the end of
			// a full epoch.
			if i+1 < len(log.Records) {
				switch log.Records[i+1].(type) {
				case wire.AssistantRecord, wire.UserRecord, wire.EpochEnd:
				default:
					return bad("answer_cut is not followed by the answer it describes")
				}
			}
		case wire.EpochEnd:
			if i != len(log.Records)-1 {
				return bad("records after epoch_end")
			}
			if v.Next != epoch+1 {
				return bad(fmt.Sprintf("epoch_end names epoch %d next", v.Next))
			}
		}
		if i == 0 {
			if _, ok := r.(wire.SessionStart); !ok {
				return bad("the first record is not session_start")
			}
		}
	}
	return nil
}

// verifySent checks that the request rebuilt from the log is byte for byte
// the last one sent, and takes that request's numbers as the cache
// accounting's expectation. A difference means a record was changed after
// it was written; the next request will then also show a cache loss.
func (s *Session) verifySent() {
	sent, err := sessionlog.LastSent(s.path)
	if err != nil {
		s.report("epoch %d: %v; the cache accounting starts afresh", s.epoch, err)
		return
	}
	if sent == nil {
		return
	}
	s.sentSlot(sent)
	if sent.Records > s.req.Len() {
		s.report("epoch %d: the log has %d records, but the last request sent was built from %d: records are missing; %s",
			s.epoch, s.req.Len(), sent.Records, runbook.See("session-rebuild-differs"))
	} else if body := s.req.BodyAt(sent.Records); len(body) != sent.Bytes || wire.Sha256(body) != sent.Hash {
		s.report("epoch %d: the log no longer renders the request last sent (%d records, %d bytes, sha256 %s; now %d bytes, sha256 %s): "+
			"a record was changed after it was written; %s",
			s.epoch, sent.Records, sent.Bytes, sent.Hash, len(body), wire.Sha256(body), runbook.See("session-rebuild-differs"))
	}
	s.last = sent
}

// callsFrom is the next call id: one past the highest in this epoch, or
// in the latest earlier epoch that has any, since ids increase across the
// whole session.
func (s *Session) callsFrom(epoch wire.Epoch, recs []wire.LogRecord) (wire.CallID, error) {
	for {
		var max wire.CallID
		for _, r := range recs {
			if v, ok := r.(wire.ToolResultRecord); ok && v.Call > max {
				max = v.Call
			}
		}
		if max > 0 || epoch == 0 {
			return max + 1, nil
		}
		epoch--
		log, err := sessionlog.Read(sessionlog.Path(s.cfg.Home, s.id, epoch))
		if errors.Is(err, sessionlog.ErrNotFound) {
			return 1, nil
		}
		if err != nil {
			return 0, err
		}
		recs = log.Records
	}
}

// summaryBefore is the summary epoch n starts from: the previous epoch's
// epoch_end.
func (s *Session) summaryBefore(n wire.Epoch) (string, error) {
	if n == 0 {
		return "", nil
	}
	path := sessionlog.Path(s.cfg.Home, s.id, n-1)
	log, err := sessionlog.Read(path)
	if err != nil {
		return "", err
	}
	if k := len(log.Records); k > 0 && isEpochEnd(log.Records[k-1]) {
		return log.Records[k-1].(wire.EpochEnd).Summary, nil
	}
	return "", &sessionlog.DamagedError{Path: path, Line: int(log.Size), What: fmt.Sprintf("epoch %d has a log, but epoch %d does not end with epoch_end", n, n-1)}
}

func isEpochEnd(r wire.LogRecord) bool { _, ok := r.(wire.EpochEnd); return ok }

// hasSummary reports whether an epoch's records begin with the summary
// message (session_start, then a user record framed by SummaryMessage).
func hasSummary(recs []wire.LogRecord) bool {
	if len(recs) < 2 {
		return false
	}
	u, ok := recs[1].(wire.UserRecord)
	return ok && strings.HasPrefix(u.Content, "[Summary of the conversation so far, written by you at the end of epoch ")
}

// dangling is the tool calls of the last assistant record that no tool
// result answers.
func dangling(recs []wire.LogRecord) []wire.ToolCall {
	var calls []wire.ToolCall
	answered := map[string]bool{}
	last := "" // the call the last tool result answered
	cut := false
	for _, r := range recs {
		switch v := r.(type) {
		case wire.AssistantRecord:
			calls, answered = v.ToolCalls, map[string]bool{}
			if cut {
				calls = nil // a cut answer's calls were never to run
			}
		case wire.ToolResultRecord:
			answered[v.ToolCallID], last = true, v.ToolCallID
		case wire.RefusedRecord:
			// A withdrawn result answers nothing; the record after it
			// normally does.
			if last != "" {
				answered[last] = false
			}
		case wire.UserRecord:
			calls = nil
		}
		if _, ok := r.(wire.ToolResultRecord); !ok {
			last = ""
		}
		_, cut = r.(wire.AnswerCut)
	}
	var out []wire.ToolCall
	for _, c := range calls {
		if !answered[c.ID] {
			out = append(out, c)
		}
	}
	return out
}
