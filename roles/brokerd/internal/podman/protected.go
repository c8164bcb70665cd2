package podman

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/system"

	"boxmaker/policy"
)

// Protected asks the Podman service where it keeps its files (/info: the
// store's graph root, run root and volume path) and returns them with its
// socket's directory. No grant may reach them (policy's loading rule 9):
// a tool that could write there could change the tool image, another
// call's container or the service itself. brokerd adds them to the paths
// its config protects, which name only Podman's defaults.
func (r *Runtime) Protected(ctx context.Context) ([]policy.ProtectedPath, error) {
	conn, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	info, err := system.Info(conn, nil)
	if err != nil {
		return nil, unavailable("asking the Podman service where it keeps its storage", err)
	}
	var ps []policy.ProtectedPath
	for _, p := range []struct{ path, what string }{
		{info.Store.GraphRoot, "Podman's storage (graph root)"},
		{info.Store.RunRoot, "Podman's storage (run root)"},
		{info.Store.VolumePath, "Podman's volumes"},
		{filepath.Dir(strings.TrimPrefix(r.cfg.Socket, "unix://")), "the Podman service's socket directory"},
	} {
		if filepath.IsAbs(p.path) {
			ps = append(ps, policy.ProtectedPath{Path: p.path, What: p.what})
		}
	}
	return ps, nil
}
