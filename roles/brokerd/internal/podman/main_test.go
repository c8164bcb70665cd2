package podman

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

func TestMain(m *testing.M) {
	// Run as brokerd's user by TestRootlessToolsUser: brokerd's side only.
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	code := m.Run()
	podmantest.Stop()
	if profile.dir != "" {
		os.RemoveAll(profile.dir)
	}
	// conmon writes "oom" into the Podman service's working directory when
	// a container is OOM-killed, as TestMemoryLimitHolds does: it must
	// never be this package's directory (podmantest starts the service in
	// its own).
	if _, err := os.Lstat("oom"); err == nil {
		fmt.Fprintln(os.Stderr, "FAIL: an \"oom\" file appeared in the package directory: a Podman service ran here")
		code = 1
	}
	os.Exit(code)
}

var profile struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// testProfile is the tool containers' seccomp profile, written once per
// process, as New writes it into brokerd's state directory.
func testProfile(t testing.TB) string {
	t.Helper()
	profile.once.Do(func() {
		if profile.dir, profile.err = os.MkdirTemp("", "bxseccomp-"); profile.err == nil {
			profile.path, profile.err = writeSeccompProfile(profile.dir)
		}
	})
	if profile.err != nil {
		t.Fatal(profile.err)
	}
	return profile.path
}

// testScope labels this process's containers, so that its cleanup and its
// leftover checks see only its own, even on a shared service.
var testScope = fmt.Sprintf("podmantest-%d", os.Getpid())

// testRuntime is a Runtime on the test service with cfg changed by edit.
func testRuntime(t testing.TB, edit func(*Config)) *Runtime {
	t.Helper()
	socket := podmantest.Socket(t)
	cfg := DefaultConfig()
	cfg.Socket, cfg.Image, cfg.TimeoutMS = socket, podmantest.Image(t, socket), 10_000
	if edit != nil {
		edit(&cfg)
	}
	r, err := newRuntime(context.Background(), cfg, testLog{t}, testScope, testProfile(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) { l.t.Logf("%s", p); return len(p), nil }

// grantDir writes grant files and returns their directory.
func grantDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// grant is an auto grant of tool with one constraint line.
func grant(tool, constraint string) string {
	return fmt.Sprintf("tool = %q\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"private\"\n[constraints]\n%s\n", tool, constraint)
}

// call decides tool(args) against grants and runs it on rt through the
// runner, as brokerd does.
func call(t testing.TB, rt runner.Runtime, grants, tool, args string) runner.Result {
	t.Helper()
	sid, _ := wire.NewSessionID("s-1")
	d := policy.Decide(grants, wire.ToolRequest{Session: sid, Call: 1, Tool: tool, Arguments: args},
		policy.State{Taint: wire.Private}, wire.Now())
	res, err := runner.Run(context.Background(), d, rt)
	if err != nil {
		t.Fatalf("%s %s: %v (decision %v)", tool, args, err, d.Outcome())
	}
	return res
}

// content is a result's content, failing the test for anything else.
func content(t testing.TB, res runner.Result) string {
	t.Helper()
	r, ok := res.Response.(wire.ResultResponse)
	if !ok {
		t.Fatalf("not a result: %#v", res.Response)
	}
	return r.Content
}

// failure is a failed call's message, failing the test for anything else.
func failure(t testing.TB, res runner.Result) string {
	t.Helper()
	f, ok := res.Response.(wire.FailedResponse)
	if !ok {
		t.Fatalf("not failed: %#v", res.Response)
	}
	return f.Message
}

// leftovers lists this process's containers on the service.
func leftovers(t testing.TB, r *Runtime) []string {
	t.Helper()
	// Removals after the call (removeLater) are not leftovers: wait for them.
	r.Close()
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := labelled(conn, r.scope)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// hostDir makes a directory for a grant that the container's user can
// read, or write when writable: the tests run as root, and the container
// as 65534, standing in for the owner.
func hostDir(t testing.TB, writable bool, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "granted")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if writable {
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
