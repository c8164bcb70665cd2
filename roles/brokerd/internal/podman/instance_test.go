package podman

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/domain/entities/types"

	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/wire"
)

// newInstance is a Runtime as brokerd starts it, with New and its own
// state directory.
func newInstance(t *testing.T, stateDir string) *Runtime {
	t.Helper()
	socket := podmantest.Socket(t)
	cfg := DefaultConfig()
	cfg.Socket, cfg.Image, cfg.TimeoutMS = socket, podmantest.Image(t, socket), 10_000
	r, err := New(context.Background(), cfg, testLog{t}, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// running waits until r has a running container and returns it.
func running(t *testing.T, r *Runtime) types.ListContainer {
	t.Helper()
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		list, err := containers.List(conn, new(containers.ListOptions).WithFilters(map[string][]string{"label": {labelScope + "=" + r.scope}}))
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			return list[0]
		}
	}
	t.Fatal("no running container")
	return types.ListContainer{}
}

// TestSecondInstanceKeepsItsCalls: two brokerds on one Podman service,
// each with its own state directory. The second one's startup cleanup
// leaves the first one's running call alone; a restart of the first one
// (same state directory, same instance id) removes what it left.
func TestSecondInstanceKeepsItsCalls(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	a, b := newInstance(t, dirA), newInstance(t, dirB)
	if a.scope == b.scope || a.seccomp != filepath.Join(dirA, seccompFile) {
		t.Fatalf("scopes %q and %q, profile %q", a.scope, b.scope, a.seccomp)
	}
	done := make(chan wire.ToolResponse, 1)
	go func() {
		resp, _ := shellCall(t, a, "sleep 3; echo survived")
		done <- resp
	}()
	c := running(t, a)
	// Every container of a call carries the call's session and id, and
	// this instance's scope.
	if c.Labels[labelCall] != "s-1/1" || c.Labels[labelTool] != "shell" || c.Labels[labelScope] != a.scope {
		t.Errorf("labels %v", c.Labels)
	}
	n, err := b.CleanupLeftovers(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("the second instance removed %d container(s): %v", n, err)
	}
	if got := contentOf(t, <-done); got != "survived\n" {
		t.Fatalf("the first instance's call: %q", got)
	}

	// What a killed brokerd leaves: a created container of its scope.
	conn, err := a.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := containers.CreateWithSpec(conn, specFor(a.cfg, a.containerFor("shell")), nil); err != nil {
		t.Fatal(err)
	}
	a.Close()
	again := newInstance(t, dirA)
	if again.scope != a.scope {
		t.Fatalf("a restart has scope %q, was %q", again.scope, a.scope)
	}
	if n, err := b.CleanupLeftovers(context.Background()); err != nil || n != 0 {
		t.Fatalf("the second instance removed %d container(s): %v", n, err)
	}
	if n, err := again.CleanupLeftovers(context.Background()); err != nil || n != 1 {
		t.Fatalf("the restart removed %d container(s), want 1: %v", n, err)
	}
	noLeftovers(t, a)
	noLeftovers(t, b)
}

// TestInstanceID: the id is made once, kept, and a damaged one is refused
// rather than replaced (which would orphan the old one's containers).
func TestInstanceID(t *testing.T) {
	dir := t.TempDir()
	s1, err := instanceScope(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := instanceScope(dir)
	if err != nil || s1 != s2 || len(s1) != len("brokerd-")+32 {
		t.Fatalf("%q %q %v", s1, s2, err)
	}
	if s3, _ := instanceScope(t.TempDir()); s3 == s1 {
		t.Fatalf("two state directories, one id %q", s1)
	}
	if err := os.WriteFile(filepath.Join(dir, instanceFile), []byte("brokerd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := instanceScope(dir); err == nil {
		t.Fatal("a damaged instance id was accepted")
	}
}
