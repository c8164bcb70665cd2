package policy

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadAtReadsPseudoFiles: a file whose stat size is 0 but which has
// bytes (procfs) is read whole, as os.ReadFile reads it, not cut at the
// first short read. A grant cut short could lose its expires line.
func TestReadAtReadsPseudoFiles(t *testing.T) {
	// smaps is tens of kilobytes, given a page per read, with a stat size
	// of 0. It changes as this process maps memory, so the test asks for
	// about what os.ReadFile reads rather than for exact bytes. (readAt
	// does not follow links: the directory is /proc/self itself.)
	dir := "/proc/self"
	fd, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	got, err := readAt(fd, dir, "smaps", make([]byte, 0, 16))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 4*os.Getpagesize() {
		t.Fatalf("/proc/self/smaps is only %d bytes: too small to show anything", len(want))
	}
	if len(got) < len(want)*3/4 || !bytes.HasSuffix(got, []byte("\n")) {
		t.Errorf("read %d bytes of /proc/self/smaps (os.ReadFile: %d), ending %q", len(got), len(want), got[max(0, len(got)-20):])
	}
}

// TestReadAtRegularFiles: a regular file larger than the scratch buffer
// is read whole, in one read when its size is what fstat says.
func TestReadAtRegularFiles(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 100, 4097, MaxGrantFileBytes} {
		data := bytes.Repeat([]byte("x"), size)
		if err := os.WriteFile(filepath.Join(dir, "g.toml"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := openDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAt(fd, dir, "g.toml", nil)
		syscall.Close(fd)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("size %d: read %d bytes, %v", size, len(got), err)
		}
	}
}
