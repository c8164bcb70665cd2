package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	in := Inputs{Toolkit: filepath.Join(dir, "tk"), Busybox: filepath.Join(dir, "bb"), CABundle: filepath.Join(dir, "ca")}
	for p, body := range map[string]string{in.Toolkit: "TOOLKIT", in.Busybox: "BUSYBOX", in.CABundle: "PEM"} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var a, b bytes.Buffer
	if err := writeLayer(&a, in); err != nil {
		t.Fatal(err)
	}
	if err := writeLayer(&b, in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the layer is not the same bytes twice")
	}
	got := map[string]string{}
	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: owner %d:%d, time %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		switch h.Typeflag {
		case tar.TypeSymlink:
			got[h.Name] = "-> " + h.Linkname
		case tar.TypeDir:
			got[h.Name] = "dir"
		default:
			got[h.Name] = string(body)
		}
	}
	for name, want := range map[string]string{
		"bin/toolkit": "TOOLKIT", "bin/busybox": "BUSYBOX", "bin/sh": "-> busybox", "bin/ls": "-> busybox",
		"etc/ssl/certs/ca-certificates.crt": "PEM", "etc/passwd": passwd, "etc/group": group, "tmp/": "dir", "run/": "dir",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if len(got) != len(Applets)+17 {
		t.Errorf("%d entries", len(got))
	}
	for _, bad := range []string{"bin/mount", "bin/nc", "bin/wget", "bin/su"} {
		if _, ok := got[bad]; ok {
			t.Errorf("%s is in the image", bad)
		}
	}
}

// TestAppletsExistInBusybox: every applet linked is one the installed
// busybox-static has.
func TestAppletsExistInBusybox(t *testing.T) {
	out, err := exec.Command(DefaultBusybox, "--list").Output()
	if err != nil {
		t.Fatalf("%s --list (install busybox-static): %v", DefaultBusybox, err)
	}
	have := map[string]bool{}
	for _, a := range strings.Fields(string(out)) {
		have[a] = true
	}
	for _, a := range Applets {
		if !have[a] {
			t.Errorf("busybox has no applet %q", a)
		}
	}
}

func TestCheckStatic(t *testing.T) {
	if err := CheckStatic(DefaultBusybox); err != nil {
		t.Errorf("busybox-static: %v", err)
	}
	if err := CheckStatic("/bin/ls"); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("/bin/ls: %v", err)
	}
	text := filepath.Join(t.TempDir(), "script")
	os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755)
	if err := CheckStatic(text); err == nil || !strings.Contains(err.Error(), "not an ELF executable") {
		t.Errorf("a script: %v", err)
	}
	// Build refuses a dynamic toolkit before it reaches Podman.
	_, err := Build(context.Background(), Options{Socket: "unix:///nonexistent", Inputs: Inputs{Toolkit: "/bin/ls"}})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("Build with /bin/ls: %v", err)
	}
}
