package image

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// Build checks the inputs, writes the layer and imports it into the
// Podman service at opts.Socket. It returns the image's id,
// "sha256:<64 hex>", which is what brokerd.toml's [podman] image names.
func Build(ctx context.Context, opts Options) (string, error) {
	if opts.Toolkit == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("image: cannot find this executable to use as the toolkit: %w", err)
		}
		if opts.Toolkit, err = filepath.EvalSymlinks(exe); err != nil {
			return "", fmt.Errorf("image: %w", err)
		}
	}
	if opts.Busybox == "" {
		opts.Busybox = DefaultBusybox
	}
	if opts.CABundle == "" {
		opts.CABundle = DefaultCABundle
	}
	if opts.Reference == "" {
		opts.Reference = DefaultReference
	}
	for _, c := range []struct{ what, path, fix string }{
		{"the toolkit", opts.Toolkit, "build boxmaker with CGO_ENABLED=0 (just build does)"},
		{"busybox", opts.Busybox, "install Debian's busybox-static"},
	} {
		if err := CheckStatic(c.path); err != nil {
			return "", fmt.Errorf("image: %s (%s): %w; %s", c.what, c.path, err, c.fix)
		}
	}
	if _, err := os.Stat(opts.CABundle); err != nil {
		return "", fmt.Errorf("image: the CA bundle: %w; install Debian's ca-certificates", err)
	}
	conn, err := bindings.NewConnection(ctx, opts.Socket)
	if err != nil {
		return "", fmt.Errorf("image: the Podman service at %s is not reachable: %w", opts.Socket, err)
	}
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	// The writer goroutine ends when the layer is written or the reader
	// is closed below; Build waits for it either way.
	go func() {
		err := writeLayer(pw, opts.Inputs)
		pw.CloseWithError(err)
		written <- err
	}()
	report, err := images.Import(conn, pr, new(images.ImportOptions).
		WithReference(opts.Reference).
		WithMessage("boxmaker tool image").
		WithChanges([]string{"LABEL " + Label + "=" + LabelValue, `ENTRYPOINT ["/bin/toolkit"]`, "WORKDIR /", "ENV PATH=/bin"}))
	pr.CloseWithError(errors.New("image: the import ended"))
	if werr := <-written; werr != nil {
		return "", werr
	}
	if err != nil {
		return "", fmt.Errorf("image: importing into %s: %w", opts.Socket, err)
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
