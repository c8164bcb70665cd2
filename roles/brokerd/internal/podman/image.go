package podman

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/images"

	"boxmaker/roles/brokerd/internal/image"
	"boxmaker/runbook"
)

// ErrImage is what CheckImage's errors wrap.
var ErrImage = errors.New("podman: the tool image is missing or not the configured one")

// CheckImage checks that the Podman service has the tool image cfg names,
// by its full id, and that it is a boxmaker tool image. brokerd runs no
// other image: at startup, an error here stops it, with the runbook line.
func CheckImage(ctx context.Context, cfg Config) error {
	if err := cfg.Check(); err != nil {
		return fmt.Errorf("podman: [podman] %w", err)
	}
	see := runbook.See("tool-image-missing")
	if cfg.Image == "" {
		return fmt.Errorf("%w: brokerd.toml names no tool image ([podman] image); build one with \"brokerd image build --config <brokerd.toml>\" and set image to the id it prints; %s", ErrImage, see)
	}
	conn, err := (&Runtime{cfg: cfg}).connect(ctx)
	if err != nil {
		return err
	}
	hex := strings.TrimPrefix(cfg.Image, "sha256:")
	img, err := images.GetImage(conn, hex, nil)
	if err != nil {
		return fmt.Errorf("%w: the Podman service at %s has no image %s (%v); build it with \"brokerd image build --config <brokerd.toml>\" and set [podman] image to the id it prints; %s", ErrImage, cfg.Socket, cfg.Image, err, see)
	}
	if img.ID != hex {
		return fmt.Errorf("%w: %s names image %s, not %s; set [podman] image to the full id; %s", ErrImage, cfg.Socket, img.ID, cfg.Image, see)
	}
	if img.Labels[image.Label] != image.LabelValue {
		return fmt.Errorf("%w: image %s is not a boxmaker tool image (no label %s=%s); %s", ErrImage, cfg.Image, image.Label, image.LabelValue, see)
	}
	return nil
}
