// Package session runs loopd's sessions: each a directory of epoch logs, a
// request rendered in memory from the current epoch's records, and a turn
// loop that asks the model, runs its tool calls and writes every record
// before the next request is sent.
//
// One turn runs at a time per session. A second say for a busy session is
// refused at once with a failed event, rather than queued: a queued message
// would be answered from a history the owner has not seen yet, and a client
// that waits forever on a lock is worse than one told to send again.
package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/neutral"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/roles/loopd/internal/slots"
	"boxmaker/roles/loopd/internal/tools"
	"boxmaker/wire"
)

// Model is what a turn needs of the model server.
type Model interface {
	// Chat sends the request body, given as parts to be concatenated.
	Chat(ctx context.Context, body ...[]byte) (*llama.Reply, error)
}

// Config is what the manager needs; serve builds it from the config file.
type Config struct {
	// Home is BOXMAKER_HOME: sessions/ and memory/core.md are under it.
	Home string
	// SystemPrompt opens every epoch's prefix.
	SystemPrompt string
	// Slots is the number of the model server's slots (total_slots in
	// /props); sessions are spread over them (package slots). 0 means 1.
	Slots int
	// MaxSteps bounds the model requests of one turn.
	MaxSteps int
	// NCtx is the context size; EpochPercent of it ends the epoch. NCtx 0
	// never ends an epoch.
	NCtx         int
	EpochPercent int
	Model        Model
	// Tools runs tool calls; its Port is the broker (nil: none configured).
	Tools *tools.Runner
	// Now is the clock for record times (time.Now when nil).
	Now func() time.Time
	// Neutral neutralises untrusted text in requests: the served model's
	// special tokens and the fixed floor (neutral.Floor() when nil).
	Neutral *neutral.Set
	// Check, when set, is asked about every text Neutral rendered before
	// the first request that carries it is sent; an error stops the
	// request (specials.Vocabulary.Check through the model server). Serve
	// always sets it; tests of other things may leave it nil.
	Check func(ctx context.Context, texts []string) error
	// Report tells the owner something they should know but that does not
	// stop the session (a recovered torn line, a cache loss). Nil drops it.
	Report func(msg string)

	// MaxAnswerTokens is sent as max_tokens with every request: the
	// answer limit. 0 sends none.
	MaxAnswerTokens int
	// Tokens, when set, counts a text's tokens as the model server reads a
	// prompt (POST /tokenize): the size a refused message is reported
	// with, and the measure of a tool result that may not fit the context.
	// Without it a tool result is measured by its bytes.
	Tokens func(ctx context.Context, text string) (int, error)

	// pool hands out the slots; New makes it from Slots.
	pool *slots.Pool
}

// Manager holds the sessions of one loopd.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	sessions map[wire.SessionID]*Session
	closed   bool
}

// New returns a manager over cfg.Home. Sessions are read from disk when a
// message first names them, so starting is cheap however many there are.
func New(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Report == nil {
		cfg.Report = func(string) {}
	}
	if cfg.Tools == nil {
		cfg.Tools = &tools.Runner{}
	}
	if cfg.Neutral == nil {
		cfg.Neutral = neutral.Floor()
	}
	cfg.pool = slots.New(cfg.Slots)
	return &Manager{cfg: cfg, sessions: map[wire.SessionID]*Session{}}
}

// Emit receives a turn's events in order; the last is TurnReply or
// TurnFailed. A turn that could not start (no such session, a damaged log,
// a busy session) sends TurnFailed alone.
type Emit = func(wire.TurnEvent)

// Say runs one turn of session id (nil starts a new session) for text.
func (m *Manager) Say(ctx context.Context, id *wire.SessionID, text string, emit Emit) {
	s, err := m.session(id)
	if err != nil {
		emit(wire.TurnFailed{Message: err.Error()})
		return
	}
	select {
	case s.sem <- struct{}{}:
	default:
		emit(wire.TurnFailed{Message: fmt.Sprintf("session %s is busy with another turn; send this again when that turn has ended", s.id)})
		return
	}
	// The turn's last event is sent only once the session is free again, so
	// a client that says the next thing as soon as it reads the reply never
	// finds the session busy.
	var last wire.TurnEvent
	func() {
		defer func() { <-s.sem }()
		hold := func(ev wire.TurnEvent) {
			switch ev.(type) {
			case wire.TurnReply, wire.TurnFailed:
				last = ev
			default:
				emit(ev)
			}
		}
		if !s.ready {
			if err := s.open(ctx); err != nil {
				if errors.Is(err, ErrNoSession) {
					m.forget(s)
				}
				hold(wire.TurnFailed{Message: err.Error()})
				return
			}
		}
		s.turn(ctx, text, hold)
	}()
	if last != nil {
		emit(last)
	}
}

// SayNew runs the first turn of a new session whose id the client chose:
// brokerd's scheduled jobs (issue 17), which bind the id to a job before
// loopd hears of it. The id must not name a session that exists, here or
// on disk, so that the jobs socket can start sessions but never continue
// the owner's.
func (m *Manager) SayNew(ctx context.Context, id *wire.SessionID, text string, emit Emit) {
	if id == nil {
		emit(wire.TurnFailed{Message: "a say on the jobs socket must name the new session's id"})
		return
	}
	m.mu.Lock()
	_, known := m.sessions[*id]
	closed := m.closed
	m.mu.Unlock()
	if closed {
		emit(wire.TurnFailed{Message: ErrClosed.Error()})
		return
	}
	if known {
		emit(wire.TurnFailed{Message: fmt.Sprintf("session %s exists; a job's run starts a new session", id)})
		return
	}
	switch err := sessionlog.CreateDir(m.cfg.Home, *id); {
	case errors.Is(err, sessionlog.ErrExists):
		emit(wire.TurnFailed{Message: fmt.Sprintf("session %s exists; a job's run starts a new session", id)})
		return
	case err != nil:
		emit(wire.TurnFailed{Message: fmt.Sprintf("cannot create session %s: %v", id, err)})
		return
	}
	m.mu.Lock()
	if _, ok := m.sessions[*id]; !ok && !m.closed {
		m.sessions[*id] = &Session{id: *id, cfg: &m.cfg, sem: make(chan struct{}, 1), fresh: true}
	}
	m.mu.Unlock()
	m.Say(ctx, id, text, emit)
}

// forget drops a session that turned out not to exist, so names a client
// made up do not pile up.
func (m *Manager) forget(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
}

// ErrClosed is the answer to a say after Close.
var ErrClosed = errors.New("loopd is shutting down")

// session finds or makes the Session for id; a nil id creates a new one.
func (m *Manager) session(id *wire.SessionID) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if id != nil {
		if s, ok := m.sessions[*id]; ok {
			return s, nil
		}
		s := &Session{id: *id, cfg: &m.cfg, sem: make(chan struct{}, 1)}
		m.sessions[*id] = s
		return s, nil
	}
	nid, err := m.newID()
	if err != nil {
		return nil, err
	}
	s := &Session{id: nid, cfg: &m.cfg, sem: make(chan struct{}, 1), fresh: true}
	m.sessions[nid] = s
	return s, nil
}

// newID makes "chat-<unix ms>" and its directory; if that exists (two new
// sessions in one millisecond, or a clock set back), it adds -2, -3, ...
func (m *Manager) newID() (wire.SessionID, error) {
	base := "chat-" + strconv.FormatInt(m.cfg.Now().UnixMilli(), 10)
	for n := 1; n <= 100; n++ {
		name := base
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		id, err := wire.NewSessionID(name)
		if err != nil {
			return wire.SessionID{}, err
		}
		switch err := sessionlog.CreateDir(m.cfg.Home, id); {
		case err == nil:
			return id, nil
		case !errors.Is(err, sessionlog.ErrExists):
			return wire.SessionID{}, fmt.Errorf("cannot create a new session: %w", err)
		}
	}
	return wire.SessionID{}, fmt.Errorf("cannot create a new session: %s-2 to -100 all exist", base)
}

// Close waits for running turns to end (their contexts should already be
// cancelled) and closes every session's log. Later says are refused.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	var errs []error
	for _, s := range all {
		s.sem <- struct{}{}
		errs = append(errs, s.close())
		<-s.sem
	}
	return errors.Join(errs...)
}
