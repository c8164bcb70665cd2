package serve

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"boxmaker/audit"
	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
	"boxmaker/roles/loopd"
	"boxmaker/wire"
)

// TestEndToEndInOneProcess is M3a §12's end-to-end test: the fake llama
// server, loopd's turn loop and this brokerd with the recording runtime, in
// one process over real sockets. The scripted model calls call_tool for
// read_file with no grant; its next request carries the denial text, and the
// audit log holds one Decision record with no_grant.
func TestEndToEndInOneProcess(t *testing.T) {
	h := start(t, nil) // no grants at all
	dir := filepath.Dir(h.cfg.Paths.Home)
	loopHome := filepath.Join(dir, "loop")
	if err := os.MkdirAll(filepath.Join(loopHome, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(loopHome, "memory", "core.md"), []byte("The owner is Kyle.\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The model, on infer.sock directly (inferproxy only forwards bytes).
	inferSock := filepath.Join(dir, "infer.sock")
	ln, err := net.Listen("unix", inferSock)
	if err != nil {
		t.Fatal(err)
	}
	model := fakellama.New(fakellama.Options{Script: fakellama.Queue(
		fakellama.Reply{ToolCalls: []fakellama.ToolCall{{Name: "call_tool",
			Arguments: `{"tool":"read_file","arguments":{"path":"/home/kyle/notes/a.md"}}`}}},
		fakellama.Reply{Content: "I may not read that file."},
	)})
	go model.Serve(ln)
	t.Cleanup(func() { model.Close() })

	loopSock := filepath.Join(dir, "loop.sock")
	cfg := filepath.Join(dir, "loopd.toml")
	text := "[paths]\nhome = \"" + loopHome + "\"\n[model]\nsocket = \"" + inferSock + "\"\nn_ctx = 8192\n" +
		"[listen]\nsocket = \"" + loopSock + "\"\n[broker]\nsocket = \"" + h.cfg.Sockets.Broker + "\"\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	loopErr := &syncbuf.Buffer{}
	wg.Go(func() {
		if err := loopd.Serve(ctx, cfg, loopErr); err != nil {
			t.Errorf("loopd: %v\n%s", err, loopErr.String())
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Listening, not only there: the socket file exists from bind(), a
	// moment before listen() (a dial in between is refused).
	eventually(t, "loop.sock", func() bool {
		c, err := net.Dial("unix", loopSock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	c := dial(t, loopSock)
	if err := wire.WriteEnvelope(c, wire.Request(1, wire.Say{Text: "What do my notes say?"})); err != nil {
		t.Fatal(err)
	}
	var events []wire.TurnEvent
	for {
		env := c.next(t)
		events = append(events, env.Msg.(wire.TurnEvent))
		if env.Final {
			break
		}
	}
	if reply, ok := events[len(events)-1].(wire.TurnReply); !ok || reply.Content != "I may not read that file." {
		t.Fatalf("the turn ended with %#v (events %#v)\n%s", events[len(events)-1], events, loopErr.String())
	}

	var chats []fakellama.Request
	for _, r := range model.Requests() {
		if r.Path == "/v1/chat/completions" {
			chats = append(chats, r)
		}
	}
	if len(chats) != 2 {
		t.Fatalf("the model had %d chat requests, want 2", len(chats))
	}
	if !strings.Contains(string(chats[1].Body), "Denied: no grant allows this call.") {
		t.Fatalf("the model's second request lacks the denial text:\n%s", chats[1].Body)
	}
	evs := h.events()
	if len(evs) != 1 {
		t.Fatalf("audit log: %d records, want 1: %#v", len(evs), evs)
	}
	d, ok := evs[0].(wire.DecisionEvent)
	if !ok || d.Outcome != (wire.OutcomeDenied{Reason: wire.NoGrant}) || d.Tool != "read_file" || d.Grant != nil {
		t.Fatalf("audit record %#v", evs[0])
	}
	if h.rt.Count() != 0 {
		t.Fatalf("the runtime ran %d calls", h.rt.Count())
	}
	rep, err := audit.VerifyDir(filepath.Join(h.cfg.Paths.Home, "audit"))
	if err != nil || rep.Failure != nil || rep.Records != 1 {
		t.Fatalf("audit verify: %+v %v", rep, err)
	}
}
