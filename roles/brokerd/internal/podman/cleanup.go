package podman

import (
	"context"
	"errors"
	"fmt"

	"github.com/containers/podman/v5/pkg/bindings/containers"
)

// CleanupLeftovers removes every container this brokerd's label marks,
// running or not: what a crash, a kill or a failed removal left behind.
// brokerd calls it at startup, before it takes calls, and logs the count.
func (r *Runtime) CleanupLeftovers(ctx context.Context) (int, error) {
	conn, err := r.connect(ctx)
	if err != nil {
		return 0, err
	}
	ids, err := labelled(conn, r.scope)
	if err != nil {
		return 0, fmt.Errorf("podman: listing leftover tool containers: %w", err)
	}
	var errs []error
	n := 0
	for _, id := range ids {
		if err := remove(conn, id); err != nil {
			errs = append(errs, fmt.Errorf("podman: removing leftover tool container %s: %w", short(id), err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// labelled lists the ids of every container, in any state, with scope's
// label.
func labelled(conn context.Context, scope string) ([]string, error) {
	list, err := containers.List(conn, new(containers.ListOptions).WithAll(true).
		WithFilters(map[string][]string{"label": {labelScope + "=" + scope}}))
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids, nil
}
