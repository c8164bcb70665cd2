package image

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/domain/entities/types"
)

// ErrNotFound is Find's error when no tool image has the layer.
var ErrNotFound = errors.New("image: no tool image has this layer")

// selfExe opens the file this process runs, even once another file has
// been renamed over its path (deploy upgrade does): brokerd's own toolkit
// is the running build's, never the next one's.
const selfExe = "/proc/self/exe"

// withDefaults fills in the inputs left empty: this executable as the
// toolkit (the running file, by /proc/self/exe; without /proc, its path
// with symlinks followed: as a role link, it is boxmaker), Debian's
// busybox and CA bundle.
func (in Inputs) withDefaults() (Inputs, error) {
	if in.Toolkit == "" {
		if f, err := os.Open(selfExe); err == nil {
			f.Close()
			in.Toolkit = selfExe
			return in.withSystemDefaults(), nil
		}
		exe, err := os.Executable()
		if err != nil {
			return in, fmt.Errorf("image: cannot find this executable to use as the toolkit: %w", err)
		}
		if in.Toolkit, err = filepath.EvalSymlinks(exe); err != nil {
			return in, fmt.Errorf("image: %w", err)
		}
	}
	return in.withSystemDefaults(), nil
}

func (in Inputs) withSystemDefaults() Inputs {
	if in.Busybox == "" {
		in.Busybox = DefaultBusybox
	}
	if in.CABundle == "" {
		in.CABundle = DefaultCABundle
	}
	return in
}

// LayerDigest is the digest of the layer Build would write from in, empty
// fields filled in as Build fills them: "sha256:" and the hex SHA-256 of
// the tar stream. The layer depends only on the files (every time in it is
// fixed), and Podman records an imported tar's digest as the image's one
// layer (its diff id, in the image's config), so the digest names the
// content: brokerd's image = "auto" finds the image made from its own
// executable by it. The diff id is what the config says, not recomputed at
// each start: whoever may use the Podman socket could load an image
// claiming it, as they could replace any image; that socket is brokerd's
// and root's alone.
func LayerDigest(in Inputs) (string, error) {
	in, err := in.withDefaults()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if err := writeLayer(h, in); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Find returns the id of a boxmaker tool image (Label) on the Podman
// service conn whose one layer is layer; the newest if several are. It
// returns ErrNotFound when none is.
func Find(conn context.Context, layer string) (string, error) {
	list, err := images.List(conn, new(images.ListOptions).
		WithFilters(map[string][]string{"label": {Label + "=" + LabelValue}}))
	if err != nil {
		return "", fmt.Errorf("image: listing the tool images: %w", err)
	}
	slices.SortFunc(list, func(a, b *types.ImageSummary) int {
		return cmp.Or(cmp.Compare(b.Created, a.Created), cmp.Compare(a.ID, b.ID))
	})
	for _, s := range list {
		// The list's labels are checked again on the image itself below.
		got, err := layerOf(conn, s.ID)
		if err == nil && got == layer {
			return "sha256:" + s.ID, nil
		}
	}
	return "", ErrNotFound
}

// layerOf is the one layer of the tool image id, or an error if it is not
// a tool image of one layer.
func layerOf(conn context.Context, id string) (string, error) {
	img, err := images.GetImage(conn, id, nil)
	if err != nil {
		return "", err
	}
	if img.Labels[Label] != LabelValue {
		return "", fmt.Errorf("image %s is not a boxmaker tool image", id)
	}
	if img.RootFS == nil || len(img.RootFS.Layers) != 1 {
		return "", fmt.Errorf("image %s has not one layer", id)
	}
	return img.RootFS.Layers[0].String(), nil
}
