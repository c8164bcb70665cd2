package image

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLayerDigest: the digest is the SHA-256 of the very tar Build sends
// (what Podman keeps as the layer's diff id), it names the files' content
// alone (a new mtime or mode on the host changes nothing), and each input's
// content changes it.
func TestLayerDigest(t *testing.T) {
	dir := t.TempDir()
	in := Inputs{Toolkit: filepath.Join(dir, "tk"), Busybox: filepath.Join(dir, "bb"), CABundle: filepath.Join(dir, "ca")}
	write := func(p, body string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for p, body := range map[string]string{in.Toolkit: "TOOLKIT", in.Busybox: "BUSYBOX", in.CABundle: "PEM"} {
		write(p, body)
	}
	base, err := LayerDigest(in)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if err := writeLayer(h, in); err != nil {
		t.Fatal(err)
	}
	if want := "sha256:" + hex.EncodeToString(h.Sum(nil)); base != want {
		t.Fatalf("LayerDigest = %s, want the tar's %s", base, want)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(in.Toolkit, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(in.Busybox, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, _ := LayerDigest(in); d != base {
		t.Errorf("a new mtime and mode changed the digest: %s, was %s", d, base)
	}
	for _, p := range []string{in.Toolkit, in.Busybox, in.CABundle} {
		old, _ := os.ReadFile(p)
		write(p, string(old)+"!")
		if d, err := LayerDigest(in); err != nil || d == base {
			t.Errorf("%s changed, the digest did not (%v)", filepath.Base(p), err)
		}
		write(p, string(old))
	}
	in.CABundle = filepath.Join(dir, "missing")
	if _, err := LayerDigest(in); err == nil {
		t.Error("a missing input gave a digest")
	}
}

// TestToolkitIsTheRunningFile: with no toolkit named, the toolkit is the
// file this process runs, by /proc/self/exe, so that a new build renamed
// over the executable's path (deploy upgrade) is not taken for this
// brokerd's own; the digest is that of the running file's bytes.
func TestToolkitIsTheRunningFile(t *testing.T) {
	in, err := Inputs{Busybox: "bb", CABundle: "ca"}.withDefaults()
	if err != nil || in.Toolkit != "/proc/self/exe" || in.Busybox != "bb" || in.CABundle != "ca" {
		t.Fatalf("%+v, %v", in, err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	if err := os.WriteFile(ca, []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := LayerDigest(Inputs{Busybox: exe, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	named, err := LayerDigest(Inputs{Toolkit: exe, Busybox: exe, CABundle: ca})
	if err != nil || named != self {
		t.Fatalf("by /proc/self/exe %s, by its path %s (%v)", self, named, err)
	}
	defaults, err := Inputs{}.withDefaults()
	if err != nil || defaults.Busybox != DefaultBusybox || defaults.CABundle != DefaultCABundle {
		t.Fatalf("defaults %+v, %v", defaults, err)
	}
}
