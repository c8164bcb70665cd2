package image

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/images"
)

// Defaults for Inputs, from Debian's busybox-static and ca-certificates.
const (
	DefaultBusybox   = "/bin/busybox"
	DefaultCABundle  = "/etc/ssl/certs/ca-certificates.crt"
	DefaultReference = "localhost/boxmaker-toolkit:latest"
)

// Label and LabelValue mark the image as a boxmaker tool image; brokerd's
// startup check (podman.CheckImage) refuses an image without them, so that
// a mistyped id cannot name some other image that happens to exist.
const (
	Label      = "boxmaker.image"
	LabelValue = "toolkit"
)

// Options say what to build and where to import it.
type Options struct {
	Inputs
	Socket    string // the Podman service, unix:///...
	Reference string // the name to tag the image with
}

var hexID = regexp.MustCompile(`^(sha256:)?([0-9a-f]{64})$`)

// Built is what Build made or found.
type Built struct {
	ID     string // "sha256:<64 hex>", what brokerd.toml's [podman] image names
	Layer  string // the layer's digest, "sha256:<64 hex>" (LayerDigest)
	Reused bool   // an image with this layer was there already
}

// Build checks the inputs and, unless the Podman service at opts.Socket
// already has a tool image with the very layer they make (Find), writes the
// layer and imports it. Building again from the same files changes nothing.
func Build(ctx context.Context, opts Options) (Built, error) {
	in, err := opts.Inputs.withDefaults()
	if err != nil {
		return Built{}, err
	}
	if opts.Reference == "" {
		opts.Reference = DefaultReference
	}
	for _, c := range []struct{ what, path, fix string }{
		{"the toolkit", in.Toolkit, "build boxmaker with CGO_ENABLED=0 (just build does)"},
		{"busybox", in.Busybox, "install Debian's busybox-static"},
	} {
		if err := CheckStatic(c.path); err != nil {
			return Built{}, fmt.Errorf("image: %s (%s): %w; %s", c.what, c.path, err, c.fix)
		}
	}
	if _, err := os.Stat(in.CABundle); err != nil {
		return Built{}, fmt.Errorf("image: the CA bundle: %w; install Debian's ca-certificates", err)
	}
	layer, err := LayerDigest(in)
	if err != nil {
		return Built{}, err
	}
	conn, err := bindings.NewConnection(ctx, opts.Socket)
	if err != nil {
		return Built{}, fmt.Errorf("image: the Podman service at %s is not reachable: %w", opts.Socket, err)
	}
	if id, err := Find(conn, layer); err == nil {
		return Built{ID: id, Layer: layer, Reused: true}, nil
	} else if !errors.Is(err, ErrNotFound) {
		return Built{}, err
	}
	id, err := importLayer(conn, opts.Socket, opts.Reference, in)
	if err != nil {
		return Built{}, err
	}
	// Find must find what was just made, or image = "auto" never would.
	if got, err := layerOf(conn, id); err != nil || got != layer {
		why := fmt.Sprintf("layer %q", got)
		if err != nil {
			why = err.Error()
		}
		_, _ = images.Remove(conn, []string{id}, nil) // it is unusable; the error that matters is below
		return Built{}, fmt.Errorf("image: Podman keeps the imported image %s (%s, now removed) with other than %s, the digest of what was sent", id, why, layer)
	}
	return Built{ID: id, Layer: layer}, nil
}

// importLayer writes the layer into the Podman service and returns the new
// image's id.
func importLayer(conn context.Context, socket, reference string, in Inputs) (string, error) {
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	// The writer goroutine ends when the layer is written or the reader
	// is closed below; importLayer waits for it either way.
	go func() {
		err := writeLayer(pw, in)
		pw.CloseWithError(err)
		written <- err
	}()
	report, err := images.Import(conn, pr, new(images.ImportOptions).
		WithReference(reference).
		WithMessage("boxmaker tool image").
		WithChanges([]string{"LABEL " + Label + "=" + LabelValue, `ENTRYPOINT ["/bin/toolkit"]`, "WORKDIR /", "ENV PATH=/bin"}))
	pr.CloseWithError(errors.New("image: the import ended"))
	if werr := <-written; werr != nil {
		return "", werr
	}
	if err != nil {
		return "", fmt.Errorf("image: importing into %s: %w", socket, err)
	}
	m := hexID.FindStringSubmatch(strings.TrimSpace(report.Id))
	if m == nil {
		return "", fmt.Errorf("image: Podman answered with an image id %q that is not a sha256 digest", report.Id)
	}
	return "sha256:" + m[2], nil
}

// CheckStatic says why the ELF executable at path would not run in an
// image with no shared libraries, or returns nil.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("it is dynamically linked (it names an ELF interpreter)")
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return fmt.Errorf("it needs shared libraries (%s)", strings.Join(libs, ", "))
	}
	return nil
}
