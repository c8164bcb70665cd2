package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
	"boxmaker/roles/loopd/internal/channel"
	"boxmaker/roles/loopd/internal/config"
	"boxmaker/wire"
)

// [listen] gateway (issue 14): gatewayd's loop.sock, served like the
// owner's.

// serving starts Run with cfg and waits until it listens; stop ends it and
// returns its error.
func serving(t *testing.T, cfg config.Config, stderr io.Writer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: cfg, Stderr: stderr, Ready: func() { close(ready) },
			Now: func() time.Time { return time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended: %v", err)
	}
	var once bool
	var err error
	stop = func() error {
		if !once {
			once = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// exchange sends msg on a new connection to sock and reads frames until
// the final one.
func exchange(t *testing.T, sock string, msg wire.Message) []wire.Envelope {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := wire.WriteEnvelope(c, wire.Request(7, msg)); err != nil {
		t.Fatal(err)
	}
	var out []wire.Envelope
	for {
		e, err := wire.ReadEnvelope(c)
		if err != nil {
			t.Fatalf("after %d frames: %v", len(out), err)
		}
		out = append(out, e)
		if e.Final {
			return out
		}
	}
}

// TestGatewaySocket: a say over the gateway socket gets the same turn
// events as one over the owner's, in the same sessions (one manager
// serves both); a message other than say is refused there too; both
// sockets are 0600 in directories made 0700; both are gone after shutdown.
func TestGatewaySocket(t *testing.T) {
	cfg, dir := setup(t, `gateway = "[[dir]]/gw/loop.sock"`)
	if cfg.Listen.Gateway != filepath.Join(dir, "gw", "loop.sock") {
		t.Fatalf("gateway %q", cfg.Listen.Gateway)
	}
	fake := startFake(t, cfg.Model.Socket, fakellama.Options{NCtx: 8192, Script: fakellama.Queue(
		fakellama.Reply{ToolCalls: []fakellama.ToolCall{{Name: "clock", Arguments: "{}"}}},
		fakellama.Reply{Content: "It is 08:05."},
		fakellama.Reply{ToolCalls: []fakellama.ToolCall{{Name: "clock", Arguments: "{}"}}},
		fakellama.Reply{Content: "It is 08:05."},
		fakellama.Reply{Content: "Still 08:05."},
	)})
	var stderr syncbuf.Buffer
	stop := serving(t, cfg, &stderr)
	for _, sock := range []string{cfg.Listen.Socket, cfg.Listen.Gateway} {
		st, err := os.Lstat(sock)
		if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", sock, st.Mode(), err)
		}
		if d, err := os.Stat(filepath.Dir(sock)); err != nil || d.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", filepath.Dir(sock), d.Mode(), err)
		}
	}
	if !strings.Contains(stderr.String(), "serving "+cfg.Listen.Socket+" and "+cfg.Listen.Gateway+" (") {
		t.Fatalf("stderr %q", stderr.String())
	}

	owner := exchange(t, cfg.Listen.Socket, wire.Say{Text: "what time is it?"})
	gateway := exchange(t, cfg.Listen.Gateway, wire.Say{Text: "what time is it?"})
	// The same events, but for the new session's id each names.
	events := func(es []wire.Envelope) ([]wire.Message, wire.SessionID) {
		var ms []wire.Message
		var id wire.SessionID
		for _, e := range es {
			if s, ok := e.Msg.(wire.TurnSession); ok {
				id = s.Session
				s.Session = wire.SessionID{}
				ms = append(ms, s)
				continue
			}
			ms = append(ms, e.Msg)
		}
		return ms, id
	}
	om, oid := events(owner)
	gm, gid := events(gateway)
	if len(om) != 4 || !reflect.DeepEqual(om, gm) || oid == gid {
		t.Fatalf("owner's socket: %#v\ngateway's: %#v", om, gm)
	}
	if r, ok := gm[3].(wire.TurnReply); !ok || r.Content != "It is 08:05." {
		t.Fatalf("reply %#v", gm[3])
	}
	// The owner's session, continued through gatewayd's socket, is the
	// same session: the model reads its history.
	more := exchange(t, cfg.Listen.Gateway, wire.Say{Session: &oid, Text: "and now?"})
	if s, ok := more[0].Msg.(wire.TurnSession); !ok || s.Session != oid {
		t.Fatalf("first event %#v", more[0].Msg)
	}
	if r, ok := more[len(more)-1].Msg.(wire.TurnReply); !ok || r.Content != "Still 08:05." {
		t.Fatalf("last event %#v", more[len(more)-1].Msg)
	}
	reqs := fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "what time is it?") || !strings.Contains(body, "and now?") {
		t.Fatalf("request %s", body)
	}
	// Only say is accepted, on this socket as on the other.
	if r := exchange(t, cfg.Listen.Gateway, wire.Approvals{}); len(r) != 1 ||
		!reflect.DeepEqual(r[0].Msg, wire.WireError{Code: wire.Forbidden, Detail: "loop.sock accepts only say, not approvals"}) {
		t.Fatalf("approvals on the gateway socket: %#v", r)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, sock := range []string{cfg.Listen.Socket, cfg.Listen.Gateway} {
		if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left behind: %v", sock, err)
		}
	}
}

// TestGatewaySocketInUse: when the gateway socket cannot be made (another
// loopd answers there), loopd does not serve, and the owner's socket,
// made first, is removed again.
func TestGatewaySocketInUse(t *testing.T) {
	cfg, dir := setup(t, `gateway = "[[dir]]/gw/loop.sock"`)
	startFake(t, cfg.Model.Socket, fakellama.Options{NCtx: 8192})
	if err := os.MkdirAll(filepath.Join(dir, "gw"), 0o700); err != nil {
		t.Fatal(err)
	}
	other, err := net.Listen("unix", cfg.Listen.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = Run(context.Background(), Options{Config: cfg, Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), cfg.Listen.Gateway+" is in use") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Lstat(cfg.Listen.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the owner's socket was left behind: %v", err)
	}
}

// TestGatewayListenerFailureStopsBoth: a listener that fails (its socket
// closed under it) ends serving on both sockets, with the error, as a
// failed listener did when there was one.
func TestGatewayListenerFailureStopsBoth(t *testing.T) {
	dir := t.TempDir()
	var lns []net.Listener
	for _, name := range []string{"a.sock", "b.sock"} {
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
	}
	srv := &channel.Server{Say: func(context.Context, *wire.SessionID, string, func(wire.TurnEvent)) {}}
	done := make(chan error, 1)
	go func() { done <- serve(context.Background(), []*channel.Server{srv, srv}, lns) }()
	// Closed before or after its Accept starts: either way Accept fails.
	lns[1].Close()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serving went on after a listener failed")
	}
	if _, err := os.Lstat(filepath.Join(dir, "a.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the other socket was left behind: %v", err)
	}
}
