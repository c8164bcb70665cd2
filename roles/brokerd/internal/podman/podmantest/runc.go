package podmantest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	spec "github.com/opencontainers/runtime-spec/specs-go"
)

// Runc is the floor a tool call's container is measured against (issue
// 26): a bare "runc run" of a prepared bundle, with no Podman, no image
// store and no conmon. Its root is static busybox, read-only; it has its
// own PID, mount, IPC, UTS and network namespaces, no capabilities, no new
// privileges, the tools' user, and one folder bind-mounted read-only at
// its own path.
type Runc struct {
	bundle, state string
	n             atomic.Int64
}

// RuncBundle prepares the bundle, with dir mounted read-only, to run args.
// It fails the
// test without runc or busybox-static (podman-setup installs both), and
// without root.
func RuncBundle(t testing.TB, dir string, args ...string) *Runc {
	t.Helper()
	busybox, err := exec.LookPath("busybox")
	_, rerr := exec.LookPath("runc")
	if err != nil || rerr != nil || os.Geteuid() != 0 {
		t.Fatalf("podmantest: a bare runc run needs runc, busybox-static and root (apt-get install -y runc busybox-static): %v, %v, uid %d", err, rerr, os.Geteuid())
	}
	top := t.TempDir()
	r := &Runc{bundle: filepath.Join(top, "bundle"), state: filepath.Join(top, "state")}
	root := filepath.Join(r.bundle, "rootfs")
	for _, d := range []string{filepath.Join(root, "bin"), r.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"cat", "sh", "true"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("runc", "spec", "--bundle", r.bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v\n%s", err, out)
	}
	path := filepath.Join(r.bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s spec.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	s.Process.Args = args
	s.Process.Terminal = false
	s.Process.User = spec.User{UID: 65534, GID: 65534}
	s.Process.Env = []string{"PATH=/bin"}
	s.Process.Capabilities = &spec.LinuxCapabilities{}
	s.Process.NoNewPrivileges = true
	s.Root.Readonly = true
	s.Hostname = "toolkit"
	s.Mounts = append(s.Mounts, spec.Mount{Destination: dir, Source: dir, Type: "bind", Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	hasNet := false
	for _, ns := range s.Linux.Namespaces {
		hasNet = hasNet || ns.Type == spec.NetworkNamespace
	}
	if !hasNet {
		s.Linux.Namespaces = append(s.Linux.Namespaces, spec.LinuxNamespace{Type: spec.NetworkNamespace})
	}
	if data, err = json.Marshal(&s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// Run runs the bundle's command in a fresh container and returns its
// output; runc removes the container when it exits.
func (r *Runc) Run() ([]byte, error) {
	id := fmt.Sprintf("bxfloor-%d-%d", os.Getpid(), r.n.Add(1))
	var out bytes.Buffer
	cmd := exec.Command("runc", "--root", r.state, "run", "--bundle", r.bundle, id)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}
