package podman

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/images"

	"boxmaker/roles/brokerd/internal/image"
	"boxmaker/runbook"
)

// ErrImage is what CheckImage's errors wrap.
var ErrImage = errors.New("podman: the tool image is missing or not the configured one")

// AutoImage is [podman] image's value for "the tool image made from this
// brokerd's own files", found by its layer's digest at startup.
const AutoImage = "auto"

// CheckImage checks that the Podman service has the tool image cfg names,
// by its full id, and that it is a boxmaker tool image. brokerd runs no
// other image: at startup, an error here stops it, with the runbook line.
func CheckImage(ctx context.Context, cfg Config) error {
	_, err := ResolveImage(ctx, cfg)
	return err
}

// ResolveImage is CheckImage, returning the image's full id: the one cfg
// names, or for image = "auto" the newest tool image whose one layer is
// what brokerd image build makes from cfg.ImageInputs (this executable,
// when brokerd runs). An image built from another toolkit (the binary
// before an upgrade) has another layer, so it is never taken.
func ResolveImage(ctx context.Context, cfg Config) (string, error) {
	if err := cfg.Check(); err != nil {
		return "", fmt.Errorf("podman: [podman] %w", err)
	}
	see := runbook.See("tool-image-missing")
	build := fmt.Sprintf("build it with \"brokerd image build --config <brokerd.toml>\" and set [podman] image to %q or the id it prints", AutoImage)
	if cfg.Image == "" {
		return "", fmt.Errorf("%w: brokerd.toml names no tool image ([podman] image); %s; %s", ErrImage, build, see)
	}
	conn, err := (&Runtime{cfg: cfg}).connect(ctx)
	if err != nil {
		return "", err
	}
	if cfg.Image == AutoImage {
		layer, err := image.LayerDigest(cfg.ImageInputs)
		if err != nil {
			return "", fmt.Errorf("%w: image = %q: %v; %s", ErrImage, AutoImage, err, see)
		}
		id, err := image.Find(conn, layer)
		if err != nil {
			return "", fmt.Errorf("%w: image = %q: the Podman service at %s has no tool image made from this brokerd's files (layer %s): %w; %s; %s", ErrImage, AutoImage, cfg.Socket, layer, err, build, see)
		}
		return id, nil
	}
	hex := strings.TrimPrefix(cfg.Image, "sha256:")
	img, err := images.GetImage(conn, hex, nil)
	if err != nil {
		return "", fmt.Errorf("%w: the Podman service at %s has no image %s (%v); %s; %s", ErrImage, cfg.Socket, cfg.Image, err, build, see)
	}
	if img.ID != hex {
		return "", fmt.Errorf("%w: %s names image %s, not %s; set [podman] image to the full id; %s", ErrImage, cfg.Socket, img.ID, cfg.Image, see)
	}
	if img.Labels[image.Label] != image.LabelValue {
		return "", fmt.Errorf("%w: image %s is not a boxmaker tool image (no label %s=%s); %s", ErrImage, cfg.Image, image.Label, image.LabelValue, see)
	}
	return cfg.Image, nil
}

// ResolveOrBuild is ResolveImage, except that for image = "auto" with no
// tool image made from this brokerd's files it builds that image from
// them, as `brokerd image build` does, and says so on log. A new brokerd,
// or an update of busybox-static or ca-certificates, changes the layer:
// the restart that follows then makes the image its files call for rather
// than refuse every call. Any other failure is ResolveImage's.
func ResolveOrBuild(ctx context.Context, cfg Config, log io.Writer) (string, error) {
	id, err := ResolveImage(ctx, cfg)
	if err == nil || cfg.Image != AutoImage || !errors.Is(err, image.ErrNotFound) {
		return id, err
	}
	built, berr := image.Build(ctx, image.Options{Socket: cfg.Socket, Inputs: cfg.ImageInputs})
	if berr != nil {
		return "", fmt.Errorf("%w; building it from this brokerd's files failed too: %v", err, berr)
	}
	fmt.Fprintf(log, "podman: image = %q: the Podman service had no tool image made from this brokerd's files; built %s from them (layer %s)\n",
		AutoImage, built.ID, built.Layer)
	return built.ID, nil
}
