package channel

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/unixsock"
	"boxmaker/wire"
)

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chan") // socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve runs a Server with say on a fresh loop.sock until the test ends.
func serve(t *testing.T, say SayFunc) (string, *[]string) {
	t.Helper()
	path := filepath.Join(shortDir(t), "run", "loop.sock")
	ln, err := unixsock.Listen(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	srv := &Server{Say: say, Log: func(s string) { mu.Lock(); logs = append(logs, s); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return path, &logs
}

func dial(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// readAll reads frames until the connection closes.
func readAll(t *testing.T, c net.Conn) []wire.Envelope {
	t.Helper()
	var out []wire.Envelope
	for {
		e, err := wire.ReadEnvelope(c)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d frames: %v", len(out), err)
		}
		out = append(out, e)
	}
}

func script(ctx context.Context, id *wire.SessionID, text string, emit func(wire.TurnEvent)) {
	sid, _ := wire.NewSessionID("chat-1")
	emit(wire.TurnSession{Session: sid})
	emit(wire.TurnText{Content: "thinking about " + text})
	emit(wire.TurnToolCall{Call: 1, Tool: "clock", Arguments: "{}"})
	emit(wire.TurnToolOutcome{Call: 1, Tool: "clock", Status: wire.ToolResult, Class: wire.Public})
	emit(wire.TurnReply{Content: "done"})
}

func TestSayFramesInOrder(t *testing.T) {
	path, _ := serve(t, script)
	for _, p := range []string{filepath.Dir(path), path} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[p != path]; fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	c := dial(t, path)
	if err := wire.WriteEnvelope(c, wire.Request(7, wire.Say{Text: "x"})); err != nil {
		t.Fatal(err)
	}
	frames := readAll(t, c)
	var types []string
	for i, f := range frames {
		if f.ID != 7 || f.Final != (i == len(frames)-1) {
			t.Fatalf("frame %d: id %d final %v", i, f.ID, f.Final)
		}
		b, _ := wire.Marshal(f.Msg)
		types = append(types, strings.SplitN(string(b), `"`, 5)[3])
	}
	if got := strings.Join(types, " "); got != "session text tool_call tool_outcome reply" {
		t.Fatalf("frames: %s", got)
	}
}

func TestWrongKindForbidden(t *testing.T) {
	called := false
	path, logs := serve(t, func(context.Context, *wire.SessionID, string, func(wire.TurnEvent)) { called = true })
	c := dial(t, path)
	wire.WriteEnvelope(c, wire.Request(3, wire.ToolRequest{Session: mustID("chat-1"), Call: 1, Tool: "shell", Arguments: "{}"}))
	frames := readAll(t, c)
	if len(frames) != 1 || !frames[0].Final || frames[0].ID != 3 {
		t.Fatalf("frames %+v", frames)
	}
	if e, ok := frames[0].Msg.(wire.WireError); !ok || e.Code != wire.Forbidden {
		t.Fatalf("answer %#v", frames[0].Msg)
	}
	if called {
		t.Fatal("say was called")
	}
	if len(*logs) != 1 || !strings.HasSuffix((*logs)[0], "see docs/runbook.md#socket-forbidden") {
		t.Fatalf("logs %q", *logs)
	}
}

// A bad frame gets its error and closes that connection only: a turn in
// progress on another connection finishes.
func TestBadFrameClosesOnlyItsConnection(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	path, _ := serve(t, func(ctx context.Context, id *wire.SessionID, text string, emit func(wire.TurnEvent)) {
		emit(wire.TurnSession{Session: mustID("chat-1")})
		close(started)
		<-release
		emit(wire.TurnReply{Content: "still here"})
	})
	a := dial(t, path)
	wire.WriteEnvelope(a, wire.Request(1, wire.Say{Text: "long turn"}))
	<-started

	for _, tc := range []struct {
		name string
		raw  []byte
		code wire.ErrorCode
		id   uint64
	}{
		{"zero length", []byte{0, 0, 0, 0}, wire.BadFrame, 0},
		{"too long", binary.BigEndian.AppendUint32(nil, wire.MaxFrame+1), wire.BadFrame, 0},
		{"not json", frame(`{"v":1,`), wire.BadMessage, 0},
		{"bad version", frame(`{"v":2,"id":9,"final":true,"msg":{"kind":"say","body":{"session":null,"text":"x"}}}`), wire.BadVersion, 9},
		{"not final", frame(`{"v":1,"id":4,"final":false,"msg":{"kind":"say","body":{"session":null,"text":"x"}}}`), wire.BadMessage, 4},
		{"unknown field", frame(`{"v":1,"id":5,"final":true,"msg":{"kind":"say","body":{"session":null,"text":"x","y":1}}}`), wire.BadMessage, 5},
	} {
		b := dial(t, path)
		b.Write(tc.raw)
		frames := readAll(t, b)
		if len(frames) != 1 {
			t.Fatalf("%s: %d frames", tc.name, len(frames))
		}
		e, ok := frames[0].Msg.(wire.WireError)
		if !ok || e.Code != tc.code || !frames[0].Final {
			t.Fatalf("%s: answer %#v", tc.name, frames[0])
		}
		if frames[0].ID != tc.id {
			t.Fatalf("%s: id %d", tc.name, frames[0].ID)
		}
	}
	close(release)
	frames := readAll(t, a)
	if len(frames) != 2 || frames[1].Msg.(wire.TurnReply).Content != "still here" {
		t.Fatalf("the long turn: %+v", frames)
	}
}

func TestListen(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "loop.sock")
	// A stale socket (nobody listening) is removed.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	ln2, err := unixsock.Listen(path, nil, nil)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	defer ln2.Close()
	// A live one is not.
	if _, err := unixsock.Listen(path, nil, nil); err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("live socket: %v", err)
	}
	// Nor is a file that is not a socket.
	other := filepath.Join(dir, "file")
	os.WriteFile(other, nil, 0o600)
	if _, err := unixsock.Listen(other, nil, nil); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("regular file: %v", err)
	}
}

func frame(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

func mustID(s string) wire.SessionID {
	id, err := wire.NewSessionID(s)
	if err != nil {
		panic(err)
	}
	return id
}
