package deploy

import (
	"os"
	"path/filepath"
	"testing"
)

// SubordinateID maps a container id into a user's range as rootless Podman
// does (container 0 is the user; n is the (n-1)th of the range), and
// refuses what no range holds.
func TestSubordinateID(t *testing.T) {
	file := filepath.Join(t.TempDir(), "subuid")
	if err := os.WriteFile(file, []byte("# comment\nalice:100000:65536\nbx-tools:165536:65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   int
		want int
		ok   bool
	}{
		{"bx-tools", 1, 165536, true},
		{"bx-tools", 65534, 231069, true},
		{"bx-tools", 65536, 231071, true},
		{"bx-tools", 65537, 0, false},
		{"bx-tools", 0, 0, false},
		{"nobody-here", 1, 0, false},
	} {
		got, err := SubordinateID(file, tc.name, tc.id)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("SubordinateID(%s, %d) = %d, %v; want %d (ok %v)", tc.name, tc.id, got, err, tc.want, tc.ok)
		}
	}
}
