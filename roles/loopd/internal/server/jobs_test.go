package server

import (
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
	"boxmaker/wire"
)

// finalOf is the turn's final event.
func finalOf(t *testing.T, es []wire.Envelope) wire.Message {
	t.Helper()
	if len(es) == 0 {
		t.Fatal("no events")
	}
	return es[len(es)-1].Msg
}

// TestJobsSocket: brokerd's jobs socket starts a session under the id
// brokerd chose (bound to a job before loopd heard of it), and refuses
// every say that would continue a session or leave the id to loopd, so
// that it can never be used to drive the owner's sessions. The owner's
// socket keeps refusing made-up ids.
func TestJobsSocket(t *testing.T) {
	cfg, _ := setup(t, `jobs = "[[dir]]/jobs/loop.sock"`)
	startFake(t, cfg.Model.Socket, fakellama.Options{NCtx: 8192, Script: fakellama.Queue(
		fakellama.Reply{Content: "Job done."},
		fakellama.Reply{Content: "Chat reply."},
	)})
	var stderr syncbuf.Buffer
	stop := serving(t, cfg, &stderr)
	defer stop()

	id, _ := wire.NewSessionID("job-nightly-1758096300000")
	es := exchange(t, cfg.Listen.Jobs, wire.Say{Session: &id, Text: "Summarise the day."})
	if s, ok := es[0].Msg.(wire.TurnSession); !ok || s.Session != id {
		t.Fatalf("first event %#v, want session %s", es[0].Msg, id)
	}
	if r, ok := finalOf(t, es).(wire.TurnReply); !ok || r.Content != "Job done." {
		t.Fatalf("last event %#v", finalOf(t, es))
	}

	for _, c := range []struct {
		name string
		say  wire.Say
		want string
	}{
		{"continue the job's session", wire.Say{Session: &id, Text: "again"}, "exists; a job's run starts a new session"},
		{"no id", wire.Say{Text: "hello"}, "must name the new session's id"},
	} {
		es := exchange(t, cfg.Listen.Jobs, c.say)
		f, ok := finalOf(t, es).(wire.TurnFailed)
		if !ok || !strings.Contains(f.Message, c.want) || len(es) != 1 {
			t.Errorf("%s: %d events, last %#v; want failed %q alone", c.name, len(es), finalOf(t, es), c.want)
		}
	}

	// A session the owner made exists on disk: the jobs socket cannot
	// take it over either.
	owner := exchange(t, cfg.Listen.Socket, wire.Say{Text: "hi"})
	oid := owner[0].Msg.(wire.TurnSession).Session
	es = exchange(t, cfg.Listen.Jobs, wire.Say{Session: &oid, Text: "take over"})
	if f, ok := finalOf(t, es).(wire.TurnFailed); !ok || !strings.Contains(f.Message, "exists") {
		t.Fatalf("jobs socket on the owner's session: %#v", finalOf(t, es))
	}

	// The owner's socket still cannot start a session under a made-up id.
	made, _ := wire.NewSessionID("job-made-up-1")
	es = exchange(t, cfg.Listen.Socket, wire.Say{Session: &made, Text: "hi"})
	if _, ok := finalOf(t, es).(wire.TurnFailed); !ok {
		t.Fatalf("owner's socket with a made-up id: %#v", finalOf(t, es))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
