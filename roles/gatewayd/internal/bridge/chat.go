package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"boxmaker/roles/gatewayd/internal/inert"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// A conversation is a thread: its root post starts a session, every reply
// in it continues that session. Each thread has one worker at a time, so
// its messages are said in the order they were written and one turn waits
// for the one before.

type message struct {
	post mm.Post
}

type worker struct {
	root    string
	owner   Owner
	pending []message
}

// chat queues an owner's post for its thread's worker.
func (b *Bridge) chat(owner Owner, p mm.Post) {
	root := p.RootID
	if root == "" {
		root = p.ID
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w, ok := b.workers[root]; ok {
		w.pending = append(w.pending, message{p})
		return
	}
	w := &worker{root: root, owner: owner, pending: []message{{p}}}
	b.workers[root] = w
	b.wg.Add(1)
	go b.work(w)
}

// work says the thread's messages one after the other, and ends when the
// queue is empty (the next message starts a new worker).
func (b *Bridge) work(w *worker) {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		if len(w.pending) == 0 || b.ctx.Err() != nil {
			delete(b.workers, w.root)
			b.mu.Unlock()
			return
		}
		m := w.pending[0]
		w.pending = w.pending[1:]
		b.mu.Unlock()
		b.turn(w, m.post)
	}
}

// turn says one message on loop.sock and keeps one reply post in the
// thread up to date with the turn's events.
func (b *Bridge) turn(w *worker, p mm.Post) {
	ctx := b.ctx
	var session *wire.SessionID
	if t, ok := b.o.State.Thread(w.root); ok {
		id := t.Session
		session = &id
	}
	r := &reply{b: b, channel: w.owner.Channel, root: w.root}
	events, errc := b.say(ctx, session, p.Message)
	var turn inert.Turn
	r.update(ctx, &turn, false)
	tick := time.NewTicker(b.o.EditEvery)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if err := <-errc; err != nil {
					turn.Add(wire.TurnFailed{Message: err.Error()})
				}
				r.update(ctx, &turn, true)
				return
			}
			if s, isSession := ev.(wire.TurnSession); isSession && session == nil {
				id := s.Session
				session = &id
				t := state.Thread{Root: w.root, Channel: w.owner.Channel, Owner: w.owner.ID, Session: id}
				if err := b.o.State.SetThread(t); err != nil {
					b.log("cannot write the state file: thread %s is session %s only until gatewayd restarts: %v; %s", w.root, id, err, runbook.See("gatewayd-state-damaged"))
				}
			}
			turn.Add(ev)
			r.dirty = true
		case <-tick.C:
			r.update(ctx, &turn, false)
		case <-ctx.Done():
			return
		}
	}
}

// reply is the bot's one post for a turn, created at the first update and
// edited after, at most once per EditEvery (the ticker), and once more at
// the end.
type reply struct {
	b             *Bridge
	channel, root string
	post          string
	dirty         bool
	last          string
}

func (r *reply) update(ctx context.Context, turn *inert.Turn, final bool) {
	text := turn.Text()
	if text == "" || r.post != "" && (!r.dirty && !final || text == r.last) {
		return // Mattermost refuses an empty post: wait for the first event
	}
	var err error
	if r.post == "" {
		var p mm.Post
		if p, err = r.b.o.MM.CreatePost(ctx, r.channel, r.root, text); err == nil {
			r.post = p.ID
		}
	} else {
		_, err = r.b.o.MM.PatchPost(ctx, r.post, text)
	}
	if err != nil {
		r.b.log("cannot post the reply in thread %s (tried again at the next event): %v; %s", r.root, err, runbook.See("mattermost-unreachable"))
		return
	}
	r.dirty = false
	r.last = text
}

// say sends one say on loop.sock and streams the turn's events; the
// channel closes after the final one, and errc then holds nil or why the
// turn could not be followed to its end.
func (b *Bridge) say(ctx context.Context, session *wire.SessionID, text string) (<-chan wire.TurnEvent, <-chan error) {
	events := make(chan wire.TurnEvent)
	errc := make(chan error, 1)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer close(events)
		errc <- b.sayOn(ctx, session, text, events)
	}()
	return events, errc
}

func (b *Bridge) sayOn(ctx context.Context, session *wire.SessionID, text string, events chan<- wire.TurnEvent) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", b.o.LoopSocket)
	if err != nil {
		b.log("loopd is unreachable at %s: %v; %s", b.o.LoopSocket, err, runbook.See("gatewayd-loop-unavailable"))
		return errors.New("loopd is unreachable; the owner has been told in gatewayd's log")
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := wire.WriteEnvelope(conn, wire.Request(1, wire.Say{Session: session, Text: text})); err != nil {
		return fmt.Errorf("sending to loopd: %w", err)
	}
	for {
		env, err := wire.ReadEnvelope(conn)
		if err != nil {
			return fmt.Errorf("loopd's answer ended early: %w", err)
		}
		if werr, ok := env.Msg.(wire.WireError); ok {
			return fmt.Errorf("loopd refused the message: %s: %s", werr.Code, werr.Detail)
		}
		ev, ok := env.Msg.(wire.TurnEvent)
		if !ok || env.ID != 1 {
			return fmt.Errorf("loopd sent %s where a turn event belongs", env.Msg.Kind())
		}
		select {
		case events <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
		if env.Final {
			return nil
		}
	}
}
