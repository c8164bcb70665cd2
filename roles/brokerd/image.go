package brokerd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/image"
	"boxmaker/roles/brokerd/internal/podman"
)

type imageCmd struct {
	Build imageBuildCmd `cmd:"" help:"Build the tool image from this machine's files and import it into the Podman service brokerd.toml names (unless an image with the same content is there), and print its id."`
}

type imageBuildCmd struct {
	Config   string `required:"" placeholder:"PATH" help:"brokerd.toml (checked whole), for [podman] socket."`
	Toolkit  string `placeholder:"PATH" help:"A static boxmaker executable to put in the image as the toolkit (default: this executable, which must be static: CGO_ENABLED=0)."`
	Busybox  string `placeholder:"PATH" default:"/bin/busybox" help:"A static busybox for the tools' shell (Debian's busybox-static)."`
	CABundle string `name:"ca-bundle" placeholder:"PATH" default:"/etc/ssl/certs/ca-certificates.crt" help:"The CA certificates http_fetch trusts (Debian's ca-certificates)."`
}

// Run builds and imports the image and prints its id alone on stdout, so
// that a script can take it: image=$(brokerd image build --config ...).
func (c *imageBuildCmd) Run(e *env) error {
	// The whole file is checked, as brokerd serve checks it: a key that
	// serve would refuse is refused here too.
	cfg, err := config.Load(c.Config, nil)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	built, err := image.Build(ctx, image.Options{Socket: cfg.Podman.Socket,
		Inputs: image.Inputs{Toolkit: c.Toolkit, Busybox: c.Busybox, CABundle: c.CABundle}})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, built.ID)
	what := "imported"
	if built.Reused {
		what = "found, already imported,"
	}
	fmt.Fprintf(e.stderr, "%s image build: %s %s (layer %s)", e.name, what, built.ID, built.Layer)
	switch {
	case cfg.Podman.Image == podman.AutoImage && c.Toolkit == "" && c.Busybox == image.DefaultBusybox && c.CABundle == image.DefaultCABundle:
		fmt.Fprintf(e.stderr, "; %s has image = %q, which finds it\n", c.Config, podman.AutoImage)
	case cfg.Podman.Image == built.ID:
		fmt.Fprintf(e.stderr, "; %s names it already\n", c.Config)
	default:
		fmt.Fprintf(e.stderr, "; set [podman] image = %q in %s\n", built.ID, c.Config)
	}
	return nil
}
