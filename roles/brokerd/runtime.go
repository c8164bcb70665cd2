package brokerd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/podman"
	"boxmaker/roles/brokerd/internal/runner"
)

// newRuntime is the one place the runtime that runs allowed calls is
// chosen. With a [podman] image in brokerd.toml it is the Podman runner,
// which refuses to start unless the image is the one named and the limits
// are seen enforced; the containers a crashed brokerd left are removed
// first (only this brokerd instance's: another brokerd on the same
// service keeps its running calls). Without an image nothing runs: every allowed call fails, and
// brokerd says so at startup. serve closes a runtime that is an io.Closer.
func newRuntime(ctx context.Context, cfg config.Config, stderr io.Writer) (runner.Runtime, error) {
	if cfg.Podman.Image == "" {
		fmt.Fprintln(stderr, "brokerd: no [podman] image in the config: no tool will run, every allowed call fails")
		return runner.Refusing{}, nil
	}
	// <home>/broker/podman: the instance id that scopes this brokerd's
	// containers, and the tool containers' seccomp profile.
	rt, err := podman.New(ctx, cfg.Podman, stderr, filepath.Join(cfg.Paths.Home, "broker", "podman"))
	if err != nil {
		return nil, err
	}
	n, err := rt.CleanupLeftovers(ctx)
	if err != nil {
		rt.Close()
		return nil, err
	}
	fmt.Fprintf(stderr, "brokerd: removed %d container(s) left by an earlier run\n", n)
	return rt, nil
}
