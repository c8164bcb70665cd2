package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLogFilesUseDataSync: log files opened for appending sync with
// fdatasync and report its failure; a directory opened to be synced keeps
// fsync.
func TestLogFilesUseDataSync(t *testing.T) {
	dir := t.TempDir()
	f, err := osOpenFile(filepath.Join(dir, "x.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(logFile); !ok {
		t.Fatalf("a log file is %T, want logFile", f)
	}
	if _, err := f.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	f.Close()
	if err := f.Sync(); err == nil {
		t.Error("sync of a closed file succeeded")
	}
	d, err := osOpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, ok := d.(*os.File); !ok {
		t.Errorf("a directory is %T, want *os.File", d)
	}
	if err := d.Sync(); err != nil {
		t.Errorf("directory sync: %v", err)
	}
}
