package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/wire"
)

// testdata/oldlog holds a session written by loopd before issue 16 (two
// epochs, a tool call, a summary), byte for byte with its .sent files. It
// must read back record for record to the same bytes, rebuild the very
// requests the old loopd sent (no session-rebuild-differs, with the answer
// limit now set), and go on.
func TestLogOfTheOldCodeLoads(t *testing.T) {
	const name = "chat-1758096300001"
	e := newEnv(t, fakellama.Options{Script: fakellama.Queue(text("Back again."))}, nil)
	e.cfg.MaxAnswerTokens = 2048
	e.restart()
	src := filepath.Join("testdata", "oldlog", name)
	dst := filepath.Join(e.home, "sessions", name)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		b, err := os.ReadFile(filepath.Join(src, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, ent.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(ent.Name(), ".jsonl") {
			continue
		}
		log, err := sessionlog.Read(filepath.Join(dst, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
		if len(lines) != len(log.Records) {
			t.Fatalf("%s: %d lines, %d records", ent.Name(), len(lines), len(log.Records))
		}
		for i, r := range log.Records {
			if got, err := wire.Marshal(&r); err != nil || !bytes.Equal(got, lines[i]) {
				t.Fatalf("%s:%d re-encodes as %s (%v)", ent.Name(), i+1, got, err)
			}
		}
	}
	id, err := wire.NewSessionID(name)
	if err != nil {
		t.Fatal(err)
	}
	evs := e.say(&id, "Are you there?")
	if got := replyOf(t, evs); got != "Back again." || evs[0].(wire.TurnSession).Epoch != 1 {
		t.Fatalf("%#v", evs)
	}
	// The fake server is new, so its cache is empty: one cache loss, and
	// nothing else to report.
	if r := e.takeReports(); len(r) != 1 || !strings.Contains(r[0], "(a cache loss)") {
		t.Fatalf("reports %q", r)
	}
	body := string(e.chats()[0].Body)
	if !strings.HasSuffix(body, `{"role":"user","content":"Are you there?"}],"max_tokens":2048}`) {
		t.Fatalf("request %s", body)
	}
}

// A refused record must follow what it withdraws, and an answer_cut record
// must precede its answer; a log where they do not is damaged.
func TestNewRecordsInPossibleOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		recs []wire.LogRecord
		want string
	}{
		{"refused after an answer", []wire.LogRecord{wire.AssistantRecord{ToolCalls: []wire.ToolCall{}}, wire.RefusedRecord{}},
			"refused follows wire.AssistantRecord, not a user message or a tool result"},
		{"refused twice", []wire.LogRecord{wire.UserRecord{Content: "x"}, wire.RefusedRecord{}, wire.RefusedRecord{}},
			"refused follows wire.RefusedRecord"},
		{"answer_cut before a user message", []wire.LogRecord{wire.AnswerCut{Tokens: 1, Reason: wire.CutAnswerLimit}, wire.UserRecord{Content: "x"}},
			"answer_cut is not followed by the answer it describes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakellama.Options{Script: fakellama.Queue(text("one"), text("two"))}, nil)
			id := sessionOf(t, e.say(nil, "first"))
			e.mgr.Close()
			w, err := sessionlog.OpenWriter(sessionlog.Path(e.home, id, 0))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.recs {
				if err := w.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			e.restart()
			if msg := failedOf(t, e.say(&id, "again")); !strings.Contains(msg, tc.want) || !strings.HasSuffix(msg, "see docs/runbook.md#session-log-damaged") {
				t.Fatalf("got %q", msg)
			}
		})
	}
}
