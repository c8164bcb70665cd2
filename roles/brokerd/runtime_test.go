package brokerd

import (
	"path/filepath"
	"slices"
	"testing"

	"boxmaker/roles/brokerd/internal/config"
)

// TestProtectedPaths: brokerd serve protects, from every tool mount, the
// files its config names: BOXMAKER_HOME and its parts, the grants, both
// sockets, the config file itself (as an absolute path, as it was read)
// and the Podman service's socket.
func TestProtectedPaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg, err := config.Parse("brokerd.toml", []byte("[paths]\nhome = \"/srv/bx\"\ngrants = \"/etc/bx/grants\"\n\n[podman]\nsocket = \"unix:///run/podman/p.sock\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := protectedPaths(cfg, "conf/brokerd.toml")
	for _, want := range []string{"/srv/bx", "/srv/bx/audit", "/srv/bx/broker", "/srv/bx/run", "/etc/bx/grants",
		cfg.Sockets.Broker, cfg.Sockets.Admin, filepath.Join(dir, "conf", "brokerd.toml"), "/run/podman/p.sock"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not protected: %q", want, got)
		}
	}
}
