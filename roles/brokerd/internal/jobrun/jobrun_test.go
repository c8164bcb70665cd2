package jobrun

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

// TestCut: a long result keeps its two ends within the limit, as valid
// UTF-8, and says how much was cut; a short one is unchanged.
func TestCut(t *testing.T) {
	for _, tc := range []struct {
		content string
		max     int
	}{
		{"short", 100},
		{strings.Repeat("a", 1000), 100},
		{strings.Repeat("é", 1000), 101},
		{strings.Repeat("日本", 500), 77},
		{"x" + strings.Repeat("🙂", 300) + "y", 64},
	} {
		got := cut(tc.content, tc.max)
		if len(tc.content) <= tc.max {
			if got != tc.content {
				t.Errorf("cut changed a short content: %q", got)
			}
			continue
		}
		if len(got) > tc.max || !utf8.ValidString(got) || !strings.Contains(got, " bytes cut here ...]") {
			t.Errorf("cut(%d bytes, %d) = %d bytes %q", len(tc.content), tc.max, len(got), got)
		}
		head, _, _ := strings.Cut(got, "\n[... ")
		if !strings.HasPrefix(tc.content, head) {
			t.Errorf("the beginning was not kept: %q", head)
		}
	}
}

// TestSayRefusesAnotherSession: loopd's answer must be the turn of the
// session brokerd bound, in order, ending in a final reply; anything else
// (a compromised loopd running the job elsewhere, say) fails the run.
func TestSayRefusesAnotherSession(t *testing.T) {
	id, _ := wire.NewSessionID("job-x-1")
	other, _ := wire.NewSessionID("chat-1")
	for _, tc := range []struct {
		name    string
		answer  []wire.Envelope
		want    string // "" : the reply "done"
		timeout bool
	}{
		{"ok", []wire.Envelope{wire.Reply(1, false, wire.TurnSession{Session: id}), wire.Reply(1, false, wire.TurnText{Content: "hm"}),
			wire.Reply(1, true, wire.TurnReply{Content: "done"})}, "", false},
		{"another session", []wire.Envelope{wire.Reply(1, false, wire.TurnSession{Session: other}),
			wire.Reply(1, true, wire.TurnReply{Content: "done"})}, "not job-x-1", false},
		{"no session first", []wire.Envelope{wire.Reply(1, true, wire.TurnReply{Content: "done"})}, "without naming the session", false},
		{"refused", []wire.Envelope{wire.Reply(1, true, wire.TurnFailed{Message: "session job-x-1 exists"})}, "did not start the session", false},
		{"failed turn", []wire.Envelope{wire.Reply(1, false, wire.TurnSession{Session: id}), wire.Reply(1, true, wire.TurnFailed{Message: "model down"})},
			"the turn failed: model down", false},
		{"another request's answer", []wire.Envelope{wire.Reply(2, false, wire.TurnSession{Session: id})}, "answered request 2", false},
		{"a reply that is not last", []wire.Envelope{wire.Reply(1, false, wire.TurnSession{Session: id}),
			wire.Reply(1, false, wire.TurnReply{Content: "done"})}, "not its last word", false},
		{"never ends", []wire.Envelope{wire.Reply(1, false, wire.TurnSession{Session: id})}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "jr")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			sock := filepath.Join(dir, "l.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				if _, err := wire.ReadEnvelope(c); err != nil {
					return
				}
				for _, env := range tc.answer {
					if wire.WriteEnvelope(c, env) != nil {
						return
					}
				}
				if tc.timeout {
					time.Sleep(2 * time.Second)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			reply, err := say(ctx, sock, id, "prompt")
			switch {
			case tc.timeout:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("got %q, %v; want the deadline", reply, err)
				}
			case tc.want == "":
				if err != nil || reply != "done" {
					t.Fatalf("got %q, %v", reply, err)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("got %q, %v; want an error saying %q", reply, err, tc.want)
			}
		})
	}
}
