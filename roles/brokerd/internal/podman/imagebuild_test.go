package podman

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/images"

	"boxmaker/roles/brokerd/internal/image"
	"boxmaker/roles/brokerd/internal/podman/podmantest"
)

// TestResolveOrBuild: image = "auto" with files no tool image was made
// from (a CA bundle updated, say) builds the image at start, says so on
// the log, and the next start finds that same image; an id the owner set
// that is missing is still refused, never built over.
func TestResolveOrBuild(t *testing.T) {
	socket := podmantest.Socket(t)
	cfg := DefaultConfig()
	cfg.Socket, cfg.Image, cfg.ImageInputs = socket, AutoImage, podmantest.Inputs(t)
	// Content no other run has: the image is built here, then removed.
	cfg.ImageInputs.CABundle = writeFile(t, fmt.Sprintf("a CA bundle updated at %d\n", time.Now().UnixNano()))
	layer, err := image.LayerDigest(cfg.ImageInputs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveImage(context.Background(), cfg); !errors.Is(err, image.ErrNotFound) {
		t.Fatalf("before: %v", err)
	}
	var log bytes.Buffer
	id, err := ResolveOrBuild(context.Background(), cfg, &log)
	if err != nil {
		t.Fatal(err)
	}
	conn, cerr := (&Runtime{cfg: cfg}).connect(context.Background())
	if cerr != nil {
		t.Fatal(cerr)
	}
	t.Cleanup(func() { images.Remove(conn, []string{id}, nil) })
	want := fmt.Sprintf("podman: image = \"auto\": the Podman service had no tool image made from this brokerd's files; built %s from them (layer %s)\n", id, layer)
	if log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	log.Reset()
	if again, err := ResolveOrBuild(context.Background(), cfg, &log); err != nil || again != id || log.Len() != 0 {
		t.Errorf("the next start: %q, %v, log %q; want %s found", again, err, log.String(), id)
	}
	named := cfg
	named.Image = "sha256:" + strings.Repeat("0", 64)
	if _, err := ResolveOrBuild(context.Background(), named, &log); !errors.Is(err, ErrImage) || log.Len() != 0 {
		t.Errorf("a missing id the owner set: %v, log %q", err, log.String())
	}
}
