package sessionlog

import (
	"os"
	"path/filepath"
	"testing"
)

// Read never panics, and what it accepts is whole: every byte of the file
// is a record's line, a listed torn line or the torn tail.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"type":"user","time":"2025-09-17T08:05:00.001Z","content":"hello"}` + "\n"))
	f.Add([]byte(`{"type":"user","time":"2025-09-17T08:05:00.001Z","content":"hello"}` + "\n" + `{"type":"us`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "0.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		log, err := Read(path)
		if err != nil {
			return
		}
		torn := 0
		if log.Torn != nil {
			torn = log.Torn.Bytes
		}
		if log.Size != int64(len(data)) || len(log.Records) != len(log.Lines) || torn > len(data) {
			t.Fatalf("log %+v of %d bytes", log, len(data))
		}
	})
}
