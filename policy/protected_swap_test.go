package policy

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A path that a host swaps between resolve's lstat and its readlink (issue
// 29's racer made a valid grant set read as invalid) is looked at afresh:
// what the lstat found is given here as a stale entry in seen, the file at
// the path being what the swap left.
func TestProtectedPathChangedBeforeReadlink(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, gone, link := filepath.Join(base, "d"), filepath.Join(base, "gone"), filepath.Join(base, "l")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"a link that became a directory", dir + "/f", dir + "/f"},
		{"a link that is gone", gone + "/f", gone + "/f"},
		{"a link that is another link now", link + "/f", dir + "/f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]lstatResult{}
			if _, err := resolveSeen(tc.path, seen); err != nil {
				t.Fatal(err)
			}
			stale := filepath.Dir(tc.path)
			seen[stale] = lstatResult{mode: syscall.S_IFLNK}
			got, err := resolveSeen(tc.path, seen)
			if err != nil || got != tc.want {
				t.Fatalf("resolveSeen = %q, %v; want %q", got, err, tc.want)
			}
			if r := seen[stale]; tc.name != "a link that is another link now" && r.mode == syscall.S_IFLNK && r.err == nil {
				t.Errorf("seen still says %s is a link", stale)
			}
		})
	}
}

// Any readlink error other than "changed" stands, and a path that keeps
// changing is not followed for ever: the resolution fails closed.
func TestProtectedReadlinkErrorsStand(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file where seen says a link was: readlink's EINVAL sends it to a
	// fresh lstat, which finds the file.
	seen := map[string]lstatResult{file: {mode: syscall.S_IFLNK}}
	if got, err := resolveSeen(file, seen); err != nil || got != file {
		t.Fatalf("resolveSeen = %q, %v", got, err)
	}
	// Below a file: readlink's ENOTDIR says nothing changed, so it stands.
	seen = map[string]lstatResult{file + "/l": {mode: syscall.S_IFLNK}}
	if got, err := resolveSeen(file+"/l/x", seen); err == nil {
		t.Fatalf("a link that cannot be read was followed, to %q", got)
	}
}
