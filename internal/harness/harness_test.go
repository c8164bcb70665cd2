package harness_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"boxmaker/internal/harness"
	"boxmaker/internal/syncbuf"
	"boxmaker/wire"
)

// These tests are M3a §12's scripted check and the chat issue's crash
// tests: every role its own process, over real sockets, with real Podman.
// They need Podman (.ci/podman-setup installs it) and fail without it.

// podmanTags are the build tags the Podman bindings need (docs/decisions.md,
// "Podman build tags"); the justfile sets the same ones.
const podmanTags = "remote,exclude_graphdriver_btrfs,btrfs_noversion,exclude_graphdriver_devicemapper,containers_image_openpgp"

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// TestMain removes what build made once every test has run.
func TestMain(m *testing.M) {
	// Run as another user by TestDeployed, the binary is only a probe.
	if ask := os.Getenv("BOXMAKER_PROBE"); ask != "" {
		os.Exit(probeMain(ask))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	// conmon's OOM marker: the harness's Podman service must run in its
	// own directory, never this one.
	if _, err := os.Lstat("oom"); err == nil {
		fmt.Fprintln(os.Stderr, "FAIL: an \"oom\" file appeared in the package directory: a Podman service ran here")
		code = 1
	}
	os.Exit(code)
}

// build builds boxmaker, its links and fakellama once for the package.
func build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "bxbin-")
		if buildErr != nil {
			return
		}
		for _, args := range [][]string{
			{"go", "build", "-tags", podmanTags, "-o", filepath.Join(binDir, "boxmaker"), "../.."},
			{"go", "build", "-o", filepath.Join(binDir, "fakellama"), "../fakellama/cmd/fakellama"},
			{filepath.Join(binDir, "boxmaker"), "links", binDir},
		} {
			cmd := exec.Command(args[0], args[1:]...)
			// Static, as just build makes it: brokerd image build puts this
			// very binary into the tool image as the toolkit.
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				buildErr = &buildError{args, out, err}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

type buildError struct {
	args []string
	out  []byte
	err  error
}

func (e *buildError) Error() string {
	return strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + string(e.out)
}

func start(t testing.TB, ttlMs int) (*harness.Harness, *syncbuf.Buffer) {
	t.Helper()
	return startWith(t, ttlMs, nil)
}

// startWith starts the harness in a new home, with gatewayd when m is set,
// and stops it when the test ends.
func startWith(t testing.TB, ttlMs int, m *harness.Mattermost) (*harness.Harness, *syncbuf.Buffer) {
	t.Helper()
	return startOptions(t, harness.Options{TTLMs: ttlMs, Mattermost: m})
}

// startOptions starts the harness with o, its binaries and a new home
// filled in, and stops it when the test ends.
func startOptions(t testing.TB, o harness.Options) (*harness.Harness, *syncbuf.Buffer) {
	t.Helper()
	bin := build(t)
	home, err := os.MkdirTemp("", "bxe2e-")
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	o.Bin, o.Home, o.Log = bin, home, log
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := harness.Start(ctx, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		if t.Failed() {
			t.Logf("the harness's output:\n%s", log.String())
		}
		os.RemoveAll(home)
	})
	return h, log
}

// terminal is bxctl chat under a pseudo-terminal, as a person runs it.
type terminal struct {
	t   *testing.T
	pty *os.File
	out *syncbuf.Buffer
	cmd *exec.Cmd
}

func chat(t *testing.T, h *harness.Harness, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "bxctl"), append([]string{"chat"}, args...)...)
	cmd.Env = append(os.Environ(), "BOXMAKER_HOME="+h.Home)
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, pty: f, out: &syncbuf.Buffer{}, cmd: cmd}
	done := make(chan struct{})
	go func() { defer close(done); _, _ = bytes.NewBuffer(nil).ReadFrom(teeReader{f, term.out}) }()
	t.Cleanup(func() { f.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait(); <-done })
	return term
}

type teeReader struct {
	f   *os.File
	out *syncbuf.Buffer
}

func (r teeReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.out.Write(p[:n])
	return n, err
}

// expect waits until the terminal has shown want, after from bytes.
func (term *terminal) expect(from int, want string) int {
	term.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s := term.out.String()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
	}
	term.t.Fatalf("the terminal never showed %q; it shows:\n%s", want, term.out.String())
	return 0
}

func (term *terminal) typeLine(s string) {
	term.t.Helper()
	if _, err := term.pty.Write([]byte(s + "\n")); err != nil {
		term.t.Fatal(err)
	}
}

// events reads the audit log's events in order.
func events(t *testing.T, h *harness.Harness) []wire.AuditEvent {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(h.Home, "audit", "*.jsonl"))
	var out []wire.AuditEvent
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			var rec wire.AuditRecord
			if err := wire.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, rec.Event)
		}
	}
	return out
}

func verify(t *testing.T, h *harness.Harness) string {
	t.Helper()
	var out bytes.Buffer
	if err := h.Bxctl(context.Background(), nil, &out, &out, "audit", "verify", "--home", h.Home); err != nil {
		t.Fatalf("audit verify: %v\n%s", err, out.String())
	}
	if !strings.HasPrefix(out.String(), "audit: ok, ") {
		t.Fatalf("audit verify: %s", out.String())
	}
	return out.String()
}

func kinds(evs []wire.AuditEvent) string {
	var k []string
	for _, e := range evs {
		switch e := e.(type) {
		case wire.DecisionEvent:
			switch o := e.Outcome.(type) {
			case wire.OutcomeDenied:
				k = append(k, "decision:"+o.Reason.String())
			case wire.OutcomeAsk:
				k = append(k, "decision:ask")
			default:
				k = append(k, "decision:allowed")
			}
		case wire.ApprovalEvent:
			k = append(k, "approval:"+e.Answer.String())
		case wire.ResultEvent:
			k = append(k, "result:"+e.Status.String())
		case wire.RecoveryEvent:
			k = append(k, "recovery")
		case wire.AcceptedBreakEvent:
			k = append(k, "accepted_break")
		}
	}
	return strings.Join(k, " ")
}
