package brokerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pelletier/go-toml/v2"

	"boxmaker/roles/brokerd/internal/image"
	"boxmaker/roles/brokerd/internal/podman"
)

type imageCmd struct {
	Build imageBuildCmd `cmd:"" help:"Build the tool image from this machine's files, import it into the Podman service brokerd.toml names, and print its id for [podman] image."`
}

type imageBuildCmd struct {
	Config   string `required:"" placeholder:"PATH" help:"brokerd.toml, for [podman] socket."`
	Toolkit  string `placeholder:"PATH" help:"A static boxmaker executable to put in the image as the toolkit (default: this executable, which must be static: CGO_ENABLED=0)."`
	Busybox  string `placeholder:"PATH" default:"/bin/busybox" help:"A static busybox for the tools' shell (Debian's busybox-static)."`
	CABundle string `name:"ca-bundle" placeholder:"PATH" default:"/etc/ssl/certs/ca-certificates.crt" help:"The CA certificates http_fetch trusts (Debian's ca-certificates)."`
}

// Run builds and imports the image and prints its id alone on stdout, so
// that a script can take it: image=$(brokerd image build --config ...).
func (c *imageBuildCmd) Run(e *env) error {
	cfg, err := podmanSection(c.Config)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	id, err := image.Build(ctx, image.Options{Socket: cfg.Socket,
		Inputs: image.Inputs{Toolkit: c.Toolkit, Busybox: c.Busybox, CABundle: c.CABundle}})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, id)
	fmt.Fprintf(e.stderr, "%s image build: imported %s as %s; set [podman] image = %q in %s\n", e.name, id, image.DefaultReference, id, c.Config)
	return nil
}

// podmanSection reads brokerd.toml's [podman] section, strictly, and only
// that section: brokerd serve checks the rest. (Once brokerd's config
// embeds podman.Config, this is config.Load(path).Podman.)
func podmanSection(path string) (podman.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return podman.Config{}, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return podman.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	cfg := podman.DefaultConfig()
	if section, ok := doc["podman"]; ok {
		b, err := toml.Marshal(map[string]any{"podman": section})
		if err != nil {
			return podman.Config{}, fmt.Errorf("%s: [podman]: %w", path, err)
		}
		var wrap struct {
			Podman *podman.Config `toml:"podman"`
		}
		wrap.Podman = &cfg
		dec := toml.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wrap); err != nil {
			var sm *toml.StrictMissingError
			if errors.As(err, &sm) && len(sm.Errors) > 0 {
				return podman.Config{}, fmt.Errorf("%s: unknown key %q", path, strings.Join(sm.Errors[0].Key(), "."))
			}
			return podman.Config{}, fmt.Errorf("%s: [podman]: %w", path, err)
		}
	}
	if err := cfg.Check(); err != nil {
		return podman.Config{}, fmt.Errorf("%s: [podman] %w", path, err)
	}
	return cfg, nil
}
