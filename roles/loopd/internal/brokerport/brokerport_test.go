package brokerport

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// fakeBroker answers each connection with the frames script returns for the
// request it read.
type fakeBroker struct {
	t    *testing.T
	path string
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	reqs []wire.ToolRequest
}

func newFakeBroker(t *testing.T, script func(req wire.Envelope, conn net.Conn)) *fakeBroker {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broker.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{t: t, path: path, ln: ln}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer conn.Close()
				env, err := wire.ReadRequest(conn)
				if err != nil {
					t.Errorf("fake broker: %v", err)
					return
				}
				b.mu.Lock()
				b.reqs = append(b.reqs, env.Msg.(wire.ToolRequest))
				b.mu.Unlock()
				script(env, conn)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); b.wg.Wait() })
	return b
}

func send(t *testing.T, conn net.Conn, id uint64, final bool, m wire.Message) {
	if err := wire.WriteEnvelope(conn, wire.Reply(id, final, m)); err != nil {
		t.Errorf("fake broker: %v", err)
	}
}

var request = func() wire.ToolRequest {
	sid, _ := wire.NewSessionID("chat-1")
	return wire.ToolRequest{Session: sid, Call: 4, Tool: "read_file", Arguments: `{"path":"/n/a.md"}`}
}()

func TestResultAndDenialPassThrough(t *testing.T) {
	for _, want := range []wire.ToolResponse{
		wire.ResultResponse{Content: "notes", Class: wire.Private, Untrusted: true},
		wire.DeniedResponse{Reason: wire.NoGrant},
		wire.FailedResponse{Message: "the runner arrives in M3b"},
	} {
		b := newFakeBroker(t, func(env wire.Envelope, conn net.Conn) { send(t, conn, env.ID, true, want) })
		var log bytes.Buffer
		got := New(b.path, time.Second, &log).Call(context.Background(), request, nil)
		if got != want {
			t.Errorf("got %#v, want %#v", got, want)
		}
		if len(b.reqs) != 1 || b.reqs[0] != request {
			t.Errorf("the broker got %#v", b.reqs)
		}
		if log.Len() != 0 {
			t.Errorf("log: %s", log.String())
		}
	}
}

func TestPendingThenResult(t *testing.T) {
	expires := wire.TimestampOf(time.Now().Add(time.Minute))
	b := newFakeBroker(t, func(env wire.Envelope, conn net.Conn) {
		send(t, conn, env.ID, false, wire.PendingResponse{Approval: 41, Expires: expires})
		time.Sleep(50 * time.Millisecond)
		send(t, conn, env.ID, true, wire.DeniedResponse{Reason: wire.ApprovalRefused})
	})
	var pending []wire.PendingResponse
	got := New(b.path, time.Second, &bytes.Buffer{}).Call(context.Background(), request, func(p wire.PendingResponse) { pending = append(pending, p) })
	if got != (wire.DeniedResponse{Reason: wire.ApprovalRefused}) {
		t.Fatalf("got %#v", got)
	}
	if len(pending) != 1 || pending[0].Approval != 41 || pending[0].Expires != expires {
		t.Fatalf("pending events %#v", pending)
	}
}

// TestPendingWaitsPastTheFirstBound: after a pending frame the port waits
// until the approval's expiry plus the slack, not the first-frame bound.
func TestPendingWaitsPastTheFirstBound(t *testing.T) {
	expires := wire.TimestampOf(time.Now().Add(300 * time.Millisecond))
	b := newFakeBroker(t, func(env wire.Envelope, conn net.Conn) {
		send(t, conn, env.ID, false, wire.PendingResponse{Approval: 7, Expires: expires})
		time.Sleep(400 * time.Millisecond) // past the 100 ms first-frame bound
		send(t, conn, env.ID, true, wire.DeniedResponse{Reason: wire.ApprovalExpired})
	})
	p := New(b.path, 100*time.Millisecond, &bytes.Buffer{})
	p.slack = 500 * time.Millisecond
	if got := p.Call(context.Background(), request, nil); got != (wire.DeniedResponse{Reason: wire.ApprovalExpired}) {
		t.Fatalf("got %#v", got)
	}
	// And gives up when the broker stays silent past expiry plus slack.
	silent := newFakeBroker(t, func(env wire.Envelope, conn net.Conn) {
		send(t, conn, env.ID, false, wire.PendingResponse{Approval: 8, Expires: wire.TimestampOf(time.Now())})
		time.Sleep(time.Second)
	})
	p = New(silent.path, 100*time.Millisecond, &bytes.Buffer{})
	p.slack = 100 * time.Millisecond
	start := time.Now()
	if got := p.Call(context.Background(), request, nil); got != (wire.FailedResponse{Message: Unavailable}) {
		t.Fatalf("got %#v", got)
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Fatalf("waited %v for a silent broker", time.Since(start))
	}
}

func TestBrokerUnavailable(t *testing.T) {
	cases := map[string]func(env wire.Envelope, conn net.Conn){
		"closes early": func(wire.Envelope, net.Conn) {},
		"wrong id":     func(env wire.Envelope, conn net.Conn) { send(t, conn, env.ID+1, true, wire.OK{}) },
		"error frame": func(env wire.Envelope, conn net.Conn) {
			send(t, conn, env.ID, true, wire.WireError{Code: wire.Forbidden, Detail: "no"})
		},
		"final pending": func(env wire.Envelope, conn net.Conn) { send(t, conn, env.ID, true, wire.PendingResponse{Approval: 1}) },
		"not final": func(env wire.Envelope, conn net.Conn) {
			send(t, conn, env.ID, false, wire.DeniedResponse{Reason: wire.NoGrant})
		},
		"silent": func(wire.Envelope, net.Conn) { time.Sleep(300 * time.Millisecond) },
	}
	for name, script := range cases {
		b := newFakeBroker(t, script)
		var log bytes.Buffer
		got := New(b.path, 100*time.Millisecond, &log).Call(context.Background(), request, nil)
		if got != (wire.FailedResponse{Message: Unavailable}) {
			t.Errorf("%s: got %#v", name, got)
		}
		if !strings.Contains(log.String(), "see docs/runbook.md#broker-unavailable") {
			t.Errorf("%s: log lacks the runbook line: %q", name, log.String())
		}
	}
	var log bytes.Buffer
	got := New(filepath.Join(t.TempDir(), "none.sock"), time.Second, &log).Call(context.Background(), request, nil)
	if got != (wire.FailedResponse{Message: Unavailable}) || !strings.Contains(log.String(), "broker-unavailable") {
		t.Errorf("no socket: %#v %q", got, log.String())
	}
}

// TestAbandonedTurnClosesTheConnection: cancelling the turn's context ends
// the call at once, and the broker sees the connection close.
func TestAbandonedTurnClosesTheConnection(t *testing.T) {
	closed := make(chan struct{})
	b := newFakeBroker(t, func(env wire.Envelope, conn net.Conn) {
		send(t, conn, env.ID, false, wire.PendingResponse{Approval: 3, Expires: wire.TimestampOf(time.Now().Add(time.Minute))})
		var one [1]byte
		conn.Read(one[:]) // returns when loopd closes
		close(closed)
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	got := New(b.path, time.Second, &bytes.Buffer{}).Call(ctx, request, nil)
	if got != (wire.FailedResponse{Message: Unavailable}) {
		t.Fatalf("got %#v", got)
	}
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("the broker never saw the connection close")
	}
}
