package brokerd

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/internal/syncbuf"
	"boxmaker/wire"
)

// home makes a short temporary home and a brokerd.toml for it; socket
// paths are limited to 107 bytes. The secrets directory is <home>/secrets,
// not made: brokerd starts without one.
func home(t *testing.T) (dir, config string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "bd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	config = filepath.Join(dir, "brokerd.toml")
	text := "[paths]\nhome = \"" + dir + "\"\ngrants = \"" + filepath.Join(dir, "grants") + "\"\nsecrets = \"" + filepath.Join(dir, "secrets") + "\"\n"
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, config
}

func runServe(args ...string) (int, string, string) {
	var out, errs syncbuf.Buffer
	code := Main("brokerd", append([]string{"serve"}, args...), strings.NewReader(""), &out, &errs)
	return code, out.String(), errs.String()
}

func TestServeConfigErrors(t *testing.T) {
	dir, _ := home(t)
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[paths]\nHome = \"/x\"\n"), 0o600)
	code, _, errs := runServe("--config", bad)
	if code != 1 || errs != "brokerd serve: "+bad+":2: unknown key \"paths.Home\"\n" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = runServe("--config", filepath.Join(dir, "absent.toml"))
	if code != 1 || !strings.Contains(errs, "no such file") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// TestServeSecretsDirUnsafe: a secrets directory others can read refuses
// the start, with its reason and runbook line, before the audit log is
// touched.
func TestServeSecretsDirUnsafe(t *testing.T) {
	dir, config := home(t)
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(secrets, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	code, _, errs := runServe("--config", config)
	want := "brokerd serve: the secrets directory " + secrets + " has mode 0755: group and others must have no access (chmod 700)\n" +
		"see docs/runbook.md#secrets-dir-unsafe\n"
	if code != 1 || errs != want {
		t.Fatalf("exit %d, stderr %q; want 1, %q", code, errs, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "audit")); !os.IsNotExist(err) {
		t.Errorf("the audit directory was made before the refusal: %v", err)
	}
}

func TestServeAlreadyRunning(t *testing.T) {
	dir, config := home(t)
	w, _, err := audit.Open(filepath.Join(dir, "audit"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	code, _, errs := runServe("--config", config)
	if code != 1 || errs != "brokerd is already running\nsee docs/runbook.md#brokerd-already-running\n" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestServeNothingToAccept(t *testing.T) {
	_, config := home(t)
	code, _, errs := runServe("--config", config, "--accept-break")
	if code != 2 || !strings.Contains(errs, "nothing to accept") || !strings.HasSuffix(errs, "\nsee docs/runbook.md#audit-accept-break-nothing\n") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// TestServeChainBroken: a log copied in from elsewhere has no head beside
// it, so startup reports that too, after the broken chain.
func TestServeChainBroken(t *testing.T) {
	dir, config := home(t)
	copyLog(t, "../../fixtures/audit/changed-byte/audit", filepath.Join(dir, "audit"))
	code, _, errs := runServe("--config", config)
	if code != 1 || !strings.HasPrefix(errs, "audit: the chain is broken at 2026-09-19.jsonl:3: ") ||
		!strings.Contains(errs, "\nsee docs/runbook.md#audit-chain-broken\naudit: the log holds records") ||
		!strings.HasSuffix(errs, "\nsee docs/runbook.md#audit-head-missing\n") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func copyLog(t *testing.T, from, to string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(from, "*.jsonl"))
	if len(names) == 0 {
		t.Fatalf("no log in %s", from)
	}
	os.MkdirAll(to, 0o700)
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(n)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeRunsUntilSIGTERM: a broken chain accepted with --accept-break,
// both sockets served, and a clean stop on SIGTERM.
func TestServeRunsUntilSIGTERM(t *testing.T) {
	dir, config := home(t)
	copyLog(t, "../../fixtures/audit/changed-byte/audit", filepath.Join(dir, "audit"))
	var out, errs syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main("brokerd", []string{"serve", "--config", config, "--accept-break"}, strings.NewReader(""), &out, &errs)
	}()
	admin := filepath.Join(dir, "run", "owner-broker", "admin.sock")
	var c net.Conn
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err = net.Dial("unix", admin); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("exited %d: %s", code, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin.sock never came: %v; stderr %q", err, errs.String())
		}
	}
	defer c.Close()
	if err := wire.WriteEnvelope(c, wire.Request(1, wire.Approvals{})); err != nil {
		t.Fatal(err)
	}
	if env, err := wire.ReadEnvelope(c); err != nil || env.Msg.Kind() != wire.KindApprovalList {
		t.Fatalf("got %+v, %v", env, err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not stop on SIGTERM")
	}
	if s := errs.String(); !strings.HasPrefix(s, "audit: accepted the break at 2026-09-19.jsonl:3: ") || !strings.Contains(s, "brokerd: serving ") {
		t.Fatalf("stderr %q", s)
	}
	if _, err := os.Stat(admin); !os.IsNotExist(err) {
		t.Errorf("admin.sock left behind: %v", err)
	}
}
