package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLeftoversAreSeen: the "no container left" check can fail. A
// container with brokerd's scope label, left behind, is counted, and Stop
// reports it; the Podman service's working directory is its own.
func TestLeftoversAreSeen(t *testing.T) {
	home, err := os.MkdirTemp("", "bxh") // short: socket paths are at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	h := &Harness{o: Options{Log: io.Discard}, Home: home}
	if err := h.writeHome(); err != nil {
		t.Fatal(err)
	}
	if err := h.startPodman(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			h.Stop()
		}
	})
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(h.podman.cmd.Process.Pid) + "/cwd"); err != nil || cwd != filepath.Join(home, "podman") {
		t.Errorf("the Podman service runs in %q (%v), not a directory of its own", cwd, err)
	}
	if n, err := h.Leftovers(); err != nil || n != 0 {
		t.Fatalf("a new service: %d, %v", n, err)
	}
	// An image with one file is enough to create (not run) a container.
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "x", Mode: 0o644, Size: 1}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("x"))
	tw.Close()
	img := filepath.Join(home, "layer.tar")
	if err := os.WriteFile(img, layer.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := h.podmanCLI("import", img, "localhost/bx-leftover").CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v\n%s", err, out)
	}
	// A probe's container carries the scope and no call: still a leftover.
	if out, err := h.podmanCLI("create", "--label", "boxmaker.scope=brokerd-0123", "--label", "boxmaker.tool=probe",
		"localhost/bx-leftover", "/x").CombinedOutput(); err != nil {
		t.Fatalf("podman create: %v\n%s", err, out)
	}
	if n, err := h.Leftovers(); err != nil || n != 1 {
		t.Fatalf("a leftover container: counted %d, %v", n, err)
	}
	// Created, not initialised: not one made ahead for a call to come.
	if n, err := h.LeftoversOfCalls(); err != nil || n != 1 {
		t.Fatalf("a leftover container, while brokerd runs: counted %d, %v", n, err)
	}
	stopped = true
	if err := h.Stop(); err == nil || !strings.Contains(err.Error(), "removed 1 container(s) left behind") {
		t.Fatalf("Stop: %v", err)
	}
}
