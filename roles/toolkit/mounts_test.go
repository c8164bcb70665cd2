package toolkit

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/wire"
)

// TestCheckMounts: the toolkit runs nothing unless every mount path is,
// without a symlink on the way, the object brokerd checked.
func TestCheckMounts(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	good := wire.ToolkitMount{Path: dir, Dev: st.Dev, Ino: st.Ino}
	read := Request{Tool: "read_file", Path: str(dir + "/a.md"), OutputBytes: 100}

	read.Mounts = []wire.ToolkitMount{good}
	if res, code := call(t, read); code != exitResult || res.Text != "hello\n" {
		t.Fatalf("the checked object: %d %+v", code, res)
	}
	for name, m := range map[string]wire.ToolkitMount{
		"another inode":  {Path: dir, Dev: st.Dev, Ino: st.Ino + 1},
		"another device": {Path: dir, Dev: st.Dev + 1, Ino: st.Ino},
		"via a symlink":  {Path: base + "/link", Dev: st.Dev, Ino: st.Ino},
		"missing":        {Path: base + "/none", Dev: st.Dev, Ino: st.Ino},
	} {
		read.Mounts = []wire.ToolkitMount{good, m}
		res, code := call(t, read)
		if code != exitFailed || !strings.HasPrefix(res.Text, "toolkit: refused to run: the mount at "+m.Path+" is not what brokerd checked") ||
			!strings.HasSuffix(res.Text, "see docs/runbook.md#mount-source-refused") {
			t.Errorf("%s: %d %+v", name, code, res)
		}
	}
}
