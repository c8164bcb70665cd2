package brokerd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/podman"
	"boxmaker/roles/brokerd/internal/runner"
)

// newRuntime is the one place the runtime that runs allowed calls is
// chosen. With a [podman] image in brokerd.toml it is the Podman runner,
// which refuses to start unless the image is the one named and the limits
// are seen enforced; the containers a crashed brokerd left are removed
// first. Without an image nothing runs: every allowed call fails, and
// brokerd says so at startup. serve closes a runtime that is an io.Closer.
func newRuntime(ctx context.Context, cfg config.Config, configPath string, stderr io.Writer) (runner.Runtime, error) {
	if cfg.Podman.Image == "" {
		fmt.Fprintln(stderr, "brokerd: no [podman] image in the config: no tool will run, every allowed call fails")
		return runner.Refusing{}, nil
	}
	rt, err := podman.New(ctx, cfg.Podman, stderr)
	if err != nil {
		return nil, err
	}
	rt.Protect(protectedPaths(cfg, configPath))
	n, err := rt.CleanupLeftovers(ctx)
	if err != nil {
		rt.Close()
		return nil, err
	}
	fmt.Fprintf(stderr, "brokerd: removed %d container(s) left by an earlier run\n", n)
	return rt, nil
}

// protectedPaths are boxmaker's own files that brokerd's config names: no
// tool container may mount one of them, a folder inside one, or a folder
// that holds one (podman.Runtime.Protect), however the path reaches it.
// BOXMAKER_HOME's parts are listed as well as BOXMAKER_HOME, so that a
// bind mount of one of them elsewhere is still recognised.
func protectedPaths(cfg config.Config, configPath string) []string {
	home := cfg.Paths.Home
	paths := []string{home, filepath.Join(home, "audit"), filepath.Join(home, "broker"), filepath.Join(home, "run"),
		cfg.Paths.Grants, cfg.Sockets.Broker, cfg.Sockets.Admin}
	if abs, err := filepath.Abs(configPath); err == nil {
		paths = append(paths, abs)
	}
	if sock, ok := strings.CutPrefix(cfg.Podman.Socket, "unix://"); ok {
		paths = append(paths, sock)
	}
	return paths
}
