package fakellama

import (
	"context"
	"net/http"
)

// Outcome says how the fake's answer to a request ended.
type Outcome string

// The outcomes.
const (
	// OutcomeComplete: the whole answer was written.
	OutcomeComplete Outcome = "complete"
	// OutcomeClientGone: the client went away (or the server closed)
	// before the answer was whole; the fake noticed and stopped.
	OutcomeClientGone Outcome = "client_gone"
	// OutcomeDropped: a Drop fault cut the connection.
	OutcomeDropped Outcome = "dropped"
	// OutcomeStreamError: a StreamError fault ended the stream.
	OutcomeStreamError Outcome = "stream_error"
)

// Request is what the fake saw of one request, and how it answered.
type Request struct {
	Method string
	// Path is the request target exactly as sent (path and query).
	Path   string
	Header http.Header
	// Body is the request body, byte for byte.
	Body []byte
	// Status is the HTTP status answered (0 if none was written).
	Status  int
	Outcome Outcome
	// Chat is set for a chat completion that reached a slot.
	Chat *ChatStats
}

// ChatStats are a chat completion's cache numbers, as sent in timings.
type ChatStats struct {
	// Slot is the slot the request named (id_slot), and Waited says that
	// slot was busy with another request when this one came, so it waited
	// for it (llama-server defers such a task until the slot is free).
	Slot   int
	Waited bool
	// PromptTokens is the whole prompt's length; CacheN of it came from
	// the slot's cache and PromptN were processed (CacheN + PromptN ==
	// PromptTokens).
	PromptTokens int
	CacheN       int
	PromptN      int
	PredictedN   int
}

// Requests returns a copy of everything recorded so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyRecords()
}

func (s *Server) copyRecords() []Request {
	out := make([]Request, len(s.records))
	for i, r := range s.records {
		out[i] = *r
		if r.Chat != nil {
			c := *r.Chat
			out[i].Chat = &c
		}
	}
	return out
}

// WaitFinished waits until at least n requests have been answered (or
// given up on), then returns everything recorded; it returns ctx's error
// if ctx ends first.
func (s *Server) WaitFinished(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if s.finished >= n {
			defer s.mu.Unlock()
			return s.copyRecords(), nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// SlotTokens is the number of tokens in slot i's cache.
func (s *Server) SlotTokens(i int) int {
	sl := s.slots[i]
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return len(sl.tokens)
}

func (s *Server) setOutcome(rec *Request, o Outcome) {
	s.mu.Lock()
	rec.Outcome = o
	s.mu.Unlock()
}

func (s *Server) setChat(rec *Request, c ChatStats) {
	s.mu.Lock()
	rec.Chat = &c
	s.mu.Unlock()
}
