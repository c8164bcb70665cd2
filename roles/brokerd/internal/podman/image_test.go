package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containers/podman/v5/pkg/bindings/images"

	"boxmaker/roles/brokerd/internal/podman/podmantest"
)

func TestCheckImage(t *testing.T) {
	socket := podmantest.Socket(t)
	cfg := DefaultConfig()
	cfg.Socket, cfg.Image = socket, podmantest.Image(t, socket)
	if err := CheckImage(context.Background(), cfg); err != nil {
		t.Fatalf("the test image: %v", err)
	}

	// An image that exists but was not built by brokerd image build.
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: 2})
	tw.Write([]byte("hi"))
	tw.Close()
	conn, err := (&Runtime{cfg: cfg}).connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := images.Import(conn, &layer, new(images.ImportOptions).WithReference("localhost/boxmaker-not-a-tool-image"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { images.Remove(conn, []string{rep.Id}, nil) })
	foreign := "sha256:" + strings.TrimPrefix(rep.Id, "sha256:")

	for name, tc := range map[string]struct{ image, want string }{
		"none":       {"", "brokerd.toml names no tool image"},
		"missing":    {"sha256:" + strings.Repeat("0", 64), "has no image sha256:0000"},
		"not ours":   {foreign, "is not a boxmaker tool image"},
		"short form": {"abc", "image must be \"auto\" or the tool image's full id"},
	} {
		c := cfg
		c.Image = tc.image
		err := CheckImage(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name != "short form" && (!errors.Is(err, ErrImage) || !strings.HasSuffix(err.Error(), "see docs/runbook.md#tool-image-missing")) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// "auto": the image made from the inputs, and no other.
	auto := cfg
	auto.Image, auto.ImageInputs = AutoImage, podmantest.Inputs(t)
	if id, err := ResolveImage(context.Background(), auto); err != nil || id != cfg.Image {
		t.Errorf("auto = %q, %v; want the test image %s", id, err, cfg.Image)
	}
	other := auto
	other.ImageInputs.CABundle = writeFile(t, "another CA bundle\n")
	err = CheckImage(context.Background(), other)
	if err == nil || !errors.Is(err, ErrImage) || !strings.Contains(err.Error(), "no tool image made from this brokerd's files") ||
		!strings.HasSuffix(err.Error(), "see docs/runbook.md#tool-image-missing") {
		t.Errorf("auto, with files no image was built from: %v", err)
	}
	// New refuses to start without the image, so brokerd serve does too.
	c := cfg
	c.Image = "sha256:" + strings.Repeat("0", 64)
	if _, err := New(context.Background(), c, nil, t.TempDir()); !errors.Is(err, ErrImage) {
		t.Errorf("New: %v", err)
	}
}

func TestUnreachableService(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Socket, cfg.Image = "unix:///nonexistent/podman.sock", "sha256:"+strings.Repeat("0", 64)
	err := CheckImage(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "is not reachable") || !strings.HasSuffix(err.Error(), "see docs/runbook.md#podman-unavailable") {
		t.Fatalf("%v", err)
	}
}

func TestConfigCheck(t *testing.T) {
	c := Config{}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, DefaultConfig()) {
		t.Fatalf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Socket = "/run/podman/podman.sock" }, "socket must be a unix:// URL"},
		{func(c *Config) { c.Socket = "unix://relative.sock" }, "socket must be a unix:// URL"},
		{func(c *Config) { c.Image = "sha256:ABC" }, "image must be"},
		{func(c *Config) { c.TimeoutMS = -1 }, "timeout_ms"},
		{func(c *Config) { c.MemoryBytes = 1 << 20 }, "memory_bytes"},
		{func(c *Config) { c.Pids = 2 }, "pids"},
		{func(c *Config) { c.NoFile = 3 }, "nofile"},
		{func(c *Config) { c.OutputBytes = 1 << 30 }, "output_bytes"},
		{func(c *Config) { c.User = "nobody" }, "user must be a numeric uid:gid"},
		{func(c *Config) { c.User = "0:0" }, "must not be root"},
		{func(c *Config) { c.User = "00:1000" }, "must not be root"},
		{func(c *Config) { c.UserNS = "keep-ids" }, "userns"},
		{func(c *Config) { c.SharedDir = "run/tools-broker" }, "shared_dir must be a clean absolute path"},
		{func(c *Config) { c.SharedDir = "/run/x/../tools-broker" }, "shared_dir must be a clean absolute path"},
		{func(c *Config) { c.AcceptUnenforced = []string{"memory", "uid"} }, `accept_unenforced: "uid" is not a limit brokerd checks`},
		{func(c *Config) { c.AcceptUnenforced = []string{"Memory"} }, `accept_unenforced: "Memory" is not a limit`},
		{func(c *Config) { c.AcceptUnenforced = []string{"seccomp"} }, `"seccomp" is not a limit`},
		{func(c *Config) { c.AcceptUnenforced = []string{""} }, `"" is not a limit`},
		{func(c *Config) { c.AcceptUnenforced = []string{"pids", "cpu", "pids"} }, `accept_unenforced names "pids" twice`},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", c, err, tc.want)
		}
	}
	// What a config may say: each acceptable limit, all of them, the
	// three user namespace modes, a shared directory.
	for _, edit := range []func(*Config){
		func(c *Config) { c.AcceptUnenforced = []string{"memory"} },
		func(c *Config) { c.AcceptUnenforced = []string{"pids"} },
		func(c *Config) { c.AcceptUnenforced = []string{"cpu"} },
		func(c *Config) { c.AcceptUnenforced = []string{"nofile"} },
		func(c *Config) { c.AcceptUnenforced = []string{"fsize"} },
		func(c *Config) { c.AcceptUnenforced = slices.Clone(AcceptableLimits) },
		func(c *Config) { c.AcceptUnenforced = []string{} },
		func(c *Config) { c.UserNS = "keep-id" },
		func(c *Config) { c.UserNS = "auto" },
		func(c *Config) { c.SharedDir = "/var/lib/boxmaker/run/tools-broker" },
	} {
		c := DefaultConfig()
		edit(&c)
		if err := c.Check(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// writeFile is a new file holding body.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
