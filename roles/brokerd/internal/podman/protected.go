package podman

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/system"

	"boxmaker/policy"
)

// Protected asks the Podman service where it keeps its files (/info: the
// store's graph root, run root, volume path and storage.conf, and the OCI
// runtime and conmon it runs) and returns them with its socket's directory
// and its configuration directories. No grant may reach them (policy's
// loading rule 9): a tool that could write there could change the tool
// image, another call's container, the programs every container starts
// with, or the service's configuration (a hook or a default mount in every
// container). brokerd adds them to the paths its config protects, which
// name only Podman's defaults.
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
	found := []struct{ path, what string }{
		{filepath.Dir(strings.TrimPrefix(r.cfg.Socket, "unix://")), "the Podman service's socket directory"},
		// Its configuration: containers.conf, mounts.conf and hooks.d there
		// would give every tool container a host mount or a hook run as
		// the service's user.
		{"/etc/containers", "Podman's configuration"},
		{"/usr/share/containers", "Podman's configuration"},
	}
	if st := info.Store; st != nil {
		found = append(found, []struct{ path, what string }{
			{st.GraphRoot, "Podman's storage (graph root)"},
			{st.RunRoot, "Podman's storage (run root)"},
			{st.VolumePath, "Podman's volumes"},
			{st.ConfigFile, "Podman's storage configuration"},
		}...)
	}
	// The programs it runs every container with.
	if h := info.Host; h != nil {
		if h.OCIRuntime != nil {
			found = append(found, struct{ path, what string }{h.OCIRuntime.Path, "the OCI runtime Podman runs"})
		}
		if h.Conmon != nil {
			found = append(found, struct{ path, what string }{h.Conmon.Path, "conmon, which Podman runs"})
		}
	}
	for _, p := range found {
		if filepath.IsAbs(p.path) {
			ps = append(ps, policy.ProtectedPath{Path: p.path, What: p.what})
		}
	}
	return ps, nil
}
