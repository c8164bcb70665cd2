package bridge

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// fakeLoop is loopd on loop.sock: it records every say and answers with
// turn, which by default opens a session (new for a nil one) and replies.
type fakeLoop struct {
	path string
	ln   net.Listener
	wg   sync.WaitGroup

	mu        sync.Mutex
	says      []wire.Say
	active    int
	maxActive int
	sessions  int
	changed   chan struct{}
	turn      func(s wire.Say, send func(ev wire.TurnEvent) error)
}

func startLoop(t testing.TB, path string) *fakeLoop {
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l := &fakeLoop{path: path, ln: ln, changed: make(chan struct{})}
	l.turn = func(s wire.Say, send func(wire.TurnEvent) error) {
		send(wire.TurnReply{Content: "You said: " + s.Text})
	}
	l.wg.Add(1)
	go l.serve()
	t.Cleanup(func() { ln.Close(); l.wg.Wait() })
	return l
}

func (l *fakeLoop) setTurn(f func(s wire.Say, send func(wire.TurnEvent) error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turn = f
}

func (l *fakeLoop) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer c.Close()
			l.handle(c)
		}()
	}
}

func (l *fakeLoop) handle(c net.Conn) {
	env, err := wire.ReadRequest(c)
	if err != nil {
		return
	}
	say := env.Msg.(wire.Say)
	l.mu.Lock()
	l.says = append(l.says, say)
	l.active++
	l.maxActive = max(l.maxActive, l.active)
	sess := say.Session
	if sess == nil {
		l.sessions++
		id, _ := wire.NewSessionID(fmt.Sprintf("sess-%d", l.sessions))
		sess = &id
	}
	turn := l.turn
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	// The turn is over for loopd once it sends the final frame: it is no
	// longer active from that moment (gatewayd may say the next message as
	// soon as it reads that frame, before this handler has returned).
	ended := false
	end := func() {
		if !ended {
			ended = true
			l.mu.Lock()
			l.active--
			l.mu.Unlock()
		}
	}
	defer end()
	send := func(ev wire.TurnEvent) error {
		final := false
		switch ev.(type) {
		case wire.TurnReply, wire.TurnFailed:
			final = true
			end()
		}
		return wire.WriteEnvelope(c, wire.Reply(env.ID, final, ev))
	}
	if send(wire.TurnSession{Session: *sess, Epoch: 1}) != nil {
		return
	}
	turn(say, send)
}

// waitSays waits until loopd has been told n says, and returns them.
func (l *fakeLoop) waitSays(t *testing.T, n int) []wire.Say {
	t.Helper()
	deadline := time.After(wait)
	for {
		l.mu.Lock()
		says, ch := append([]wire.Say(nil), l.says...), l.changed
		l.mu.Unlock()
		if len(says) >= n {
			return says
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("loopd was told %d says, want %d: %+v", len(says), n, says)
		}
	}
}

// count is how many says loopd has been told.
func (l *fakeLoop) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.says)
}
