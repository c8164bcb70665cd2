package sessionlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

func sid(t *testing.T, s string) wire.SessionID {
	t.Helper()
	id, err := wire.NewSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func str(s string) *string { return &s }

func records(id wire.SessionID) []wire.LogRecord {
	return []wire.LogRecord{
		wire.SessionStart{Time: 1758096300000, Session: id, Epoch: 0, Slot: 0},
		wire.UserRecord{Time: 1758096300001, Content: "hello"},
		wire.AssistantRecord{Time: 1758096300002, Content: str("hi"), ToolCalls: []wire.ToolCall{}},
	}
}

func writeAll(t *testing.T, path string, recs []wire.LogRecord) {
	t.Helper()
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, r := range recs {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteReadModes(t *testing.T) {
	home := t.TempDir()
	id := sid(t, "chat-1")
	if err := CreateDir(home, id); err != nil {
		t.Fatal(err)
	}
	if err := CreateDir(home, id); !errors.Is(err, ErrExists) {
		t.Fatalf("second CreateDir: %v", err)
	}
	path := Path(home, id, 0)
	writeAll(t, path, records(id))
	for p, want := range map[string]os.FileMode{
		filepath.Join(home, "sessions"): 0o700 | os.ModeDir, Dir(home, id): 0o700 | os.ModeDir, path: 0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	log, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 3 || log.Torn != nil || log.Lines[2] != 3 {
		t.Fatalf("read %+v", log)
	}
	data, _ := os.ReadFile(path)
	want := `{"type":"user","time":"2025-09-17T08:05:00.001Z","content":"hello"}`
	if lines := strings.Split(string(data), "\n"); lines[1] != want || lines[3] != "" {
		t.Fatalf("line 2 %q, want %q", lines[1], want)
	}
}

func TestDamagedMiddleLine(t *testing.T) {
	home := t.TempDir()
	id := sid(t, "chat-1")
	path := Path(home, id, 0)
	if err := CreateDir(home, id); err != nil {
		t.Fatal(err)
	}
	writeAll(t, path, records(id))
	data, _ := os.ReadFile(path)
	bad := strings.Replace(string(data), `"content":"hello"`, `"content":"hello","x":1`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	var de *DamagedError
	if !errors.As(err, &de) || de.Line != 2 {
		t.Fatalf("got %v", err)
	}
	if !strings.HasSuffix(err.Error(), "see docs/runbook.md#session-log-damaged") {
		t.Fatalf("message %q", err)
	}
}

// A crash after Recover listed the line but before its newline leaves the
// line torn and listed; Recover again must finish the job without listing it
// twice.
func TestRecoverAfterCrash(t *testing.T) {
	home := t.TempDir()
	id := sid(t, "chat-1")
	path := Path(home, id, 0)
	if err := CreateDir(home, id); err != nil {
		t.Fatal(err)
	}
	writeAll(t, path, records(id))
	torn := `{"type":"user","time":"2025-09-17T08:0`
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(torn)
	f.Close()
	log, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if log.Torn == nil || log.Torn.Line != 4 || log.Torn.Bytes != len(torn) || len(log.Records) != 3 {
		t.Fatalf("torn: %+v", log.Torn)
	}
	if err := appendSynced(TornPath(path), []byte(log.Torn.String()+"\n")); err != nil {
		t.Fatal(err)
	}
	if log, err = Read(path); err != nil || log.Torn == nil {
		t.Fatalf("still torn: %v %v", log, err)
	}
	if err := Recover(path, *log.Torn); err != nil {
		t.Fatal(err)
	}
	listed, _ := os.ReadFile(TornPath(path))
	if strings.Count(string(listed), "\n") != 1 {
		t.Fatalf(".torn: %q", listed)
	}
	writeAll(t, path, []wire.LogRecord{wire.UserRecord{Time: 1758096300003, Content: "again"}})
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), torn+"\n{") {
		t.Fatalf("the torn bytes are not kept: %q", data)
	}
	if log, err = Read(path); err != nil || len(log.Records) != 4 {
		t.Fatalf("after recovery: %v %v", log, err)
	}
}

func TestTornLineRecoveredOnce(t *testing.T) {
	home := t.TempDir()
	id := sid(t, "chat-1")
	path := Path(home, id, 0)
	if err := CreateDir(home, id); err != nil {
		t.Fatal(err)
	}
	writeAll(t, path, records(id))
	torn := `{"type":"user","ti`
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(torn)
	f.Close()
	log, _ := Read(path)
	if err := Recover(path, *log.Torn); err != nil {
		t.Fatal(err)
	}
	writeAll(t, path, []wire.LogRecord{wire.UserRecord{Time: 1758096300003, Content: "again"}})
	log, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 4 || len(log.Recovered) != 1 || log.Recovered[0] != 4 || log.Torn != nil {
		t.Fatalf("after recovery: %d records, recovered %v, torn %v", len(log.Records), log.Recovered, log.Torn)
	}
	// Changing the recovered line afterwards is damage.
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "\n"+torn+"\n", "\n"+`{"type":"user","tX`+"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var de *DamagedError
	if _, err := Read(path); !errors.As(err, &de) || de.Line != 4 {
		t.Fatalf("changed recovered line: %v", err)
	}
}

func TestSent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.jsonl")
	if s, err := LastSent(path); s != nil || err != nil {
		t.Fatalf("no file: %v %v", s, err)
	}
	a := Sent{Records: 2, Bytes: 100, Hash: wire.Sha256([]byte("a")), Prompt: 40, Context: 50}
	b := Sent{Records: 5, Bytes: 200, Hash: wire.Sha256([]byte("b")), Prompt: 90, Context: 99}
	w, err := OpenSent(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Sent{a, b} {
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	got, err := LastSent(path)
	if err != nil || *got != b {
		t.Fatalf("got %+v %v", got, err)
	}
	// A torn last entry is ignored: the one before it still holds.
	f, _ := os.OpenFile(SentPath(path), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("records 9 bytes")
	f.Close()
	if got, err := LastSent(path); err != nil || *got != b {
		t.Fatalf("with a torn entry: %+v %v", got, err)
	}
}

// Entries name the slot the request went to; entries written before that
// (no slot) still load, with Slot -1.
func TestSentSlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.jsonl")
	h := wire.Sha256([]byte("a"))
	for _, tc := range []struct {
		line string
		want *Sent
	}{
		{"records 2 bytes 100 sha256 " + h.String() + " prompt 40 context 50\n", &Sent{Records: 2, Bytes: 100, Hash: h, Prompt: 40, Context: 50, Slot: -1}},
		{"records 2 bytes 100 sha256 " + h.String() + " prompt 40 context 50 slot 3\n", &Sent{Records: 2, Bytes: 100, Hash: h, Prompt: 40, Context: 50, Slot: 3}},
		{"records 2 bytes 100 sha256 " + h.String() + " prompt 40 context 50 slot -3\n", nil},
		{"records 2 bytes 100 sha256 " + h.String() + " prompt 40 context 50 slot 3 x\n", nil},
	} {
		if err := os.WriteFile(SentPath(path), []byte(tc.line), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LastSent(path)
		if tc.want == nil {
			var de *DamagedError
			if !errors.As(err, &de) {
				t.Fatalf("%q: got %+v %v, want a damaged entry", tc.line, got, err)
			}
			continue
		}
		if err != nil || *got != *tc.want {
			t.Fatalf("%q: got %+v %v, want %+v", tc.line, got, err, tc.want)
		}
		if got.String()+"\n" != tc.line {
			t.Fatalf("%q does not write back as itself: %q", tc.line, got.String())
		}
	}
}
