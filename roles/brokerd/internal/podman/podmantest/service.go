// Package podmantest gives tests a real Podman service and the tool image:
// tests run against Podman, never a fake, and fail (not skip) when it is
// missing. It runs the podman CLI for one thing only, starting a private
// "podman system service", which the design card allows tests; production
// code never runs podman.
//
// BOXMAKER_TEST_PODMAN_SOCKET names a running service to use instead
// (.ci/run starts one). Otherwise each test process starts its own, with
// its own storage, and a package using it stops it in TestMain:
//
//	func TestMain(m *testing.M) { defer podmantest.Stop(); m.Run() }
package podmantest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SocketEnv names a Podman service for the tests to use.
const SocketEnv = "BOXMAKER_TEST_PODMAN_SOCKET"

// containersConf is what Podman needs on the project's Debian 12 VMs
// (design card): runc, since crun fails on their hybrid cgroups, and the
// cgroupfs manager, with no systemd to ask.
const containersConf = "[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n"

var service struct {
	once   sync.Once
	socket string
	dir    string
	cmd    *exec.Cmd
	err    error
}

// Socket returns the Podman service's URL, unix:///..., starting a
// private service the first time it is needed in this process.
func Socket(t testing.TB) string {
	t.Helper()
	if s := os.Getenv(SocketEnv); s != "" {
		if err := ping(strings.TrimPrefix(s, "unix://"), 5*time.Second); err != nil {
			t.Fatalf("%s=%s: %v", SocketEnv, s, err)
		}
		return s
	}
	service.once.Do(func() { service.socket, service.err = start() })
	if service.err != nil {
		t.Fatalf("podmantest: no Podman service: %v\n(install podman, runc and busybox-static: apt-get install -y podman runc busybox-static; or set %s)", service.err, SocketEnv)
	}
	return service.socket
}

// PrivateSocket is Socket, but always this process's own service, never
// the shared one: for a test that wants a service no other process uses.
// (brokerd's startup cleanup removes only its own instance's containers,
// so it no longer needs one.)
func PrivateSocket(t testing.TB) string {
	t.Helper()
	service.once.Do(func() { service.socket, service.err = start() })
	if service.err != nil {
		t.Fatalf("podmantest: no Podman service: %v", service.err)
	}
	return service.socket
}

func start() (string, error) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		return "", err
	}
	// Short: a Unix socket path is at most 107 bytes.
	dir, err := os.MkdirTemp("", "bxpm-")
	if err != nil {
		return "", err
	}
	service.dir = dir
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte(containersConf), 0o644); err != nil {
		return "", err
	}
	sock := filepath.Join(dir, "podman.sock")
	log, err := os.Create(filepath.Join(dir, "service.log"))
	if err != nil {
		return "", err
	}
	defer log.Close()
	cmd := exec.Command(podman, "--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
		"--tmpdir", filepath.Join(dir, "tmp"), "--runtime", "runc", "--cgroup-manager", "cgroupfs",
		"--events-backend", "file", "system", "service", "--time=0", "unix://"+sock)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	// conmon writes a file named "oom" into the service's working
	// directory when a container is OOM-killed: never the test's (the
	// package's source directory).
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	// The service ends with this process, even if it dies without Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	service.cmd = cmd
	if err := ping(sock, 30*time.Second); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "service.log"))
		return "", fmt.Errorf("podman system service did not answer on %s: %v\n%s", sock, err, b)
	}
	return "unix://" + sock, nil
}

// ping waits until the service at sock answers its ping.
func ping(sock string, wait time.Duration) error {
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(wait)
	for {
		resp, err := client.Get("http://d/_ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("ping: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends the private service, if this process started one, and
// removes its storage and the built toolkit.
func Stop() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	if service.cmd == nil {
		return
	}
	service.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { service.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		service.cmd.Process.Kill()
		<-done
	}
	// The overlay driver bind-mounts its own directory, and the mount
	// outlives the service: without this, every run left a mount and its
	// directory behind in /tmp.
	_ = syscall.Unmount(filepath.Join(service.dir, "root", "overlay"), syscall.MNT_DETACH)
	os.RemoveAll(service.dir)
}

// CLI is the podman command line that reaches the same storage as the
// service Socket returns: the baseline for benchmarks, which compare
// brokerd's runtime with "podman run --rm" of the same image and mount.
func CLI(t testing.TB) []string {
	t.Helper()
	if s := os.Getenv(SocketEnv); s != "" {
		return []string{"podman", "--remote", "--url", s}
	}
	Socket(t)
	d := service.dir
	return []string{"env", "CONTAINERS_CONF=" + filepath.Join(d, "containers.conf"), "podman",
		"--root", filepath.Join(d, "root"), "--runroot", filepath.Join(d, "run"), "--tmpdir", filepath.Join(d, "tmp"),
		"--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"}
}
