package podman

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

// The deployment runs Podman rootless as a tools user of its own, and
// brokerd, as its own user, is the service's client (docs/decisions.md,
// "Where tool containers run"). These tests build that here with
// throwaway users: they need root, and fail without it.

// toolsHost is a rootless service run by a tools user, laid out as the
// deployment plan lays it out under a stand-in for BOXMAKER_HOME.
type toolsHost struct {
	tools, brokerd podmantest.User
	pair           int    // the group of run/broker-tools: brokerd
	home           string // stands for BOXMAKER_HOME
	shared         string // run/tools-broker: brokerd's, group tools, 02710
	svc            podmantest.ServiceAs
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test makes users and runs Podman as one of them: run it as root")
	}
}

// mkdirAs makes dir with owner, group and mode exactly.
func mkdirAs(t testing.TB, dir string, uid, gid int, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

// newToolsHost makes the users, the directories and the rootless service.
// prefix names the users and groups (unique to the test process).
func newToolsHost(t testing.TB, prefix string) *toolsHost {
	t.Helper()
	needRoot(t)
	h := &toolsHost{}
	h.tools = podmantest.AddUser(t, prefix+"tools", true)
	h.brokerd = podmantest.AddUser(t, prefix+"brokerd", false)
	h.pair = podmantest.AddGroup(t, prefix+"bt", h.brokerd.Name)
	// BOXMAKER_HOME and run/: others may pass through, to the pair
	// directories, whose own modes decide. (Not in t.TempDir, whose
	// parent is root's alone.) Removed last, after the service.
	home, err := os.MkdirTemp("", "bxhome-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	h.home = home
	mkdirAs(t, h.home, 0, 0, 0o711)
	mkdirAs(t, filepath.Join(h.home, "run"), 0, 0, 0o711)
	mkdirAs(t, filepath.Join(h.home, "broker"), h.brokerd.Uid, h.brokerd.Gid, 0o700)
	// The service's socket: the listener is the tools user, brokerd the
	// client (the plan's pair directory).
	mkdirAs(t, filepath.Join(h.home, "run", "broker-tools"), h.tools.Uid, h.pair, os.ModeSetgid|0o710)
	// What brokerd shares with the service: brokerd's, group tools.
	h.shared = filepath.Join(h.home, "run", "tools-broker")
	mkdirAs(t, h.shared, h.brokerd.Uid, h.tools.Gid, os.ModeSetgid|0o710)
	h.svc = podmantest.StartServiceAs(t, &h.tools, filepath.Join(h.home, "run", "broker-tools", "podman.sock"), h.pair, "")
	return h
}

func testPrefix(tag string) string { return fmt.Sprintf("bx%s%d-", tag, os.Getpid()%100000) }

// childEnv carries a childSpec to the test binary run as brokerd's user.
const childEnv = "BOXMAKER_TEST_ROOTLESS_CHILD"

// childSpec is what the child runs: brokerd's runtime with Config, its
// state in State, one shell call and one http_fetch under Grants.
type childSpec struct {
	Config Config
	State  string
	Grants string
	// Shell, when set, is the one call's arguments instead of the shell
	// call and http_fetch above (TestGrantsFixRootless).
	Shell string
}

// childReport is what the child saw, as JSON on its stdout.
type childReport struct {
	Log     string // the runtime's log: warnings at start
	Shell   string // the shell call's result or failure
	HostUID int    // the tool process's uid on the host, from /proc
	Fetch   string // the http_fetch's result or failure
	Err     string
}

// runChild is TestMain's branch for the child: brokerd's side, as
// brokerd's user.
func runChild(spec string) int {
	var in childSpec
	var out childReport
	defer func() { json.NewEncoder(os.Stdout).Encode(out) }()
	if err := json.Unmarshal([]byte(spec), &in); err != nil {
		out.Err = err.Error()
		return 1
	}
	var log bytes.Buffer
	ctx := context.Background()
	r, err := New(ctx, in.Config, &log, in.State)
	out.Log = log.String()
	if err != nil {
		out.Err = err.Error()
		return 1
	}
	if in.Shell != "" {
		out.Shell = childCall(in.Grants, r, "shell", in.Shell)
		return 0
	}
	found := make(chan int, 1)
	go func() { found <- toolHostUID(r, 8*time.Second) }()
	out.Shell = childCall(in.Grants, r, "shell", `{"command":"id -u; sleep 2"}`)
	out.HostUID = <-found
	out.Fetch = childCall(in.Grants, r, "http_fetch", `{"url":"https://example.com/"}`)
	return 0
}

func childCall(grants string, r *Runtime, tool, args string) string {
	sid, _ := wire.NewSessionID("s-1")
	d := policy.Decide(grants, wire.ToolRequest{Session: sid, Call: 1, Tool: tool, Arguments: args}, policy.State{Taint: wire.Private}, wire.Now())
	reason, problems, argsErr := d.Reason(), d.Problems(), d.ArgsError()
	res, err := runner.Run(context.Background(), d, r)
	if err != nil {
		return fmt.Sprintf("error: %v (reason %v, problems %v, args %v)", err, reason, problems, argsErr)
	}
	switch v := res.Response.(type) {
	case wire.ResultResponse:
		return "result: " + v.Content
	case wire.FailedResponse:
		return "failed: " + v.Message
	default:
		return fmt.Sprintf("%#v", v)
	}
}

// toolHostUID finds a running container of r's and reads its process's
// real uid on the host from /proc; -1 if none is seen within wait.
func toolHostUID(r *Runtime, wait time.Duration) int {
	conn, err := r.connect(context.Background())
	if err != nil {
		return -1
	}
	for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		ids, _ := labelled(conn, r.scope)
		for _, id := range ids {
			data, err := containers.Inspect(conn, id, nil)
			if err != nil || data.State == nil || data.State.Pid <= 0 {
				continue
			}
			if uid, ok := procUID(data.State.Pid); ok {
				return uid
			}
		}
	}
	return -1
}

// procUID is the real uid of pid, from /proc/<pid>/status.
func procUID(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				uid, err := strconv.Atoi(f[0])
				return uid, err == nil
			}
		}
	}
	return 0, false
}

// TestRootlessToolsUser: brokerd's runtime, as a brokerd user, drives a
// rootless service run by a tools user through the pair directory: a
// shell call and an http_fetch through the egress proxy work, and the
// tool's process runs on the host as a subordinate uid of the tools
// user's: not root, not brokerd, not the tools user itself.
func TestRootlessToolsUser(t *testing.T) {
	h := newToolsHost(t, testPrefix("r"))
	image := podmantest.Image(t, h.svc.Socket)
	grants := filepath.Join(h.home, "broker", "grants")
	mkdirAs(t, grants, h.brokerd.Uid, h.brokerd.Gid, 0o700)
	for name, body := range map[string]string{"shell.toml": grant("shell", ""),
		"fetch.toml": "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\nhosts = [\"example.com\"]\n"} {
		p := filepath.Join(grants, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, h.brokerd.Uid, h.brokerd.Gid)
	}
	cfg := DefaultConfig()
	cfg.Socket, cfg.Image, cfg.TimeoutMS, cfg.SharedDir = h.svc.Socket, image, 20_000, h.shared
	// This machine's cgroup v1 leaves rootless memory, pids and CPU limits
	// unenforced (TestToolModes); a v2 host with delegation holds them,
	// and then nothing is warned.
	cfg.AcceptUnenforced = []string{"memory", "pids", "cpu"}
	rep := runAsBrokerd(t, h, childSpec{Config: cfg, State: filepath.Join(h.home, "broker", "podman"), Grants: grants})
	t.Logf("child: %+v", rep)
	if rep.Err != "" {
		t.Fatalf("brokerd's runtime as %s: %s", h.brokerd.Name, rep.Err)
	}
	if rep.Shell != "result: 65534\n" {
		t.Errorf("shell: %q", rep.Shell)
	}
	sub := podmantest.SubIDStart(t, h.tools.Name)
	switch u := rep.HostUID; {
	case u < 0:
		t.Errorf("no tool process seen")
	case u == 0 || u == h.brokerd.Uid || u == h.tools.Uid:
		t.Errorf("the tool ran as host uid %d (brokerd %d, tools %d)", u, h.brokerd.Uid, h.tools.Uid)
	case u != sub+65533:
		t.Errorf("the tool ran as host uid %d, want %d: 65534 inside, in the tools user's subordinate range from %d", u, sub+65533, sub)
	}
	// Reaching the proxy shows in its refusals (no DNS here) or in a
	// fetched page; a container that could not connect says neither.
	if !strings.Contains(rep.Fetch, "(egress proxy: ") && !strings.HasPrefix(rep.Fetch, "result: ") {
		t.Errorf("http_fetch did not reach the egress proxy: %q", rep.Fetch)
	}
	// Without shared_dir the profile stays in brokerd's own directory,
	// which the service cannot read: no container is made.
	cfg.SharedDir = ""
	rep = runAsBrokerd(t, h, childSpec{Config: cfg, State: filepath.Join(h.home, "broker", "podman2"), Grants: grants})
	if !strings.Contains(rep.Err, "seccomp.json: permission denied") {
		t.Errorf("without shared_dir: %+v, want the service refused the profile", rep)
	}
}

// runAsBrokerd runs this test binary as brokerd's user (with the pair
// group) on spec, and returns what it reports.
func runAsBrokerd(t *testing.T, h *toolsHost, spec childSpec) childReport {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The go build cache's directory is root's alone.
	bin := filepath.Join(h.home, "podman.test")
	if _, err := os.Stat(bin); err != nil {
		copyFile(t, self, bin, 0o755)
	}
	b, _ := json.Marshal(spec)
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", childEnv + "=" + string(b)}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(h.brokerd.Uid), Gid: uint32(h.brokerd.Gid),
		Groups: []uint32{uint32(h.pair)}}, Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep childReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("the child: %v, %v\nstdout: %s\nstderr: %s", err, jerr, out, stderr.Bytes())
	}
	return rep
}

func copyFile(t testing.TB, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
