package podmantest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// User is a throwaway system user a test made (AddUser), removed when the
// test ends.
type User struct {
	Name     string
	Uid, Gid int
}

// AddUser makes a system user name (with a group of the same name) with
// no home and no shell; with subids, /etc/subuid and /etc/subgid get a
// range for it (useradd -F), as rootless Podman needs. The test must run
// as root and name its users with a prefix of its own.
func AddUser(t testing.TB, name string, subids bool) User {
	t.Helper()
	args := []string{"-r", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin"}
	if subids {
		args = append(args, "-F")
	}
	if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		// What a rootless service of the user's left (conmon, its pause
		// process) is the test's: it ran as this user, made by the test.
		killUID(name)
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return User{Name: name, Uid: uid, Gid: gid}
}

// AddGroup makes a system group name holding members, removed when the
// test ends, and returns its gid.
func AddGroup(t testing.TB, name string, members ...string) int {
	t.Helper()
	if out, err := exec.Command("groupadd", "-r", name).CombinedOutput(); err != nil {
		t.Fatalf("groupadd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("groupdel", name).Run() })
	for _, m := range members {
		if out, err := exec.Command("usermod", "-aG", name, m).CombinedOutput(); err != nil {
			t.Fatalf("usermod -aG %s %s: %v\n%s", name, m, err, out)
		}
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	return gid
}

// SubIDStart is the first subordinate uid /etc/subuid gives name.
func SubIDStart(t testing.TB, name string) int {
	t.Helper()
	b, err := os.ReadFile("/etc/subuid")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ":"); len(f) == 3 && f[0] == name {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no /etc/subuid entry for %s", name)
	return 0
}

// ServiceAs is a Podman service started by a test.
type ServiceAs struct {
	// Socket is the service's URL, unix:///...
	Socket string
	// Dir is its own directory: storage, runtime files, its log.
	Dir string
}

// StartServiceAs starts "podman system service" as u (nil: root) and
// stops it when the test ends. The socket is made here, as systemd's
// .socket unit makes it in a deployment, at sock with owner u, group
// sockGroup and mode 0660, and handed to the service by socket activation
// (podman makes its own socket 0600, which only its own user could use).
// autoUser, when not "", is the service's root-auto-userns-user: the user
// whose subordinate ids a rootful service gives containers with
// userns=auto (Podman's default is "containers").
func StartServiceAs(t testing.TB, u *User, sock string, sockGroup int, autoUser string) ServiceAs {
	t.Helper()
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podmantest: %v (apt-get install -y podman runc busybox-static)", err)
	}
	dir, err := os.MkdirTemp("", "bxpa-")
	if err != nil {
		t.Fatal(err)
	}
	uid, gid := 0, 0
	if u != nil {
		uid, gid = u.Uid, u.Gid
	}
	run := filepath.Join(dir, "run") // XDG_RUNTIME_DIR
	for _, d := range []string{dir, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "containers.conf")
	files := map[string]string{conf: containersConf}
	env := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir, "XDG_RUNTIME_DIR=" + run, "CONTAINERS_CONF=" + conf}
	if autoUser != "" {
		p := filepath.Join(dir, "storage.conf")
		files[p] = fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n[storage.options]\nroot-auto-userns-user = %q\n",
			filepath.Join(dir, "storage"), filepath.Join(run, "storage"), autoUser)
		env = append(env, "CONTAINERS_STORAGE_CONF="+p)
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	lf, err := ln.(*net.UnixListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := os.Chown(sock, uid, sockGroup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o660); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "service.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// LISTEN_PID must be the service's own pid: the shell's, which exec keeps.
	args := []string{"-c", `LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=podman.sock exec "$@"`, "sh", podman,
		"--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(run, "storage"),
		"--tmpdir", filepath.Join(run, "tmp"), "--runtime", "runc", "--cgroup-manager", "cgroupfs",
		"--events-backend", "file", "system", "service", "--time=0"}
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, log, log
	cmd.ExtraFiles = []*os.File{lf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopAs(cmd, dir, run) })
	if err := ping(sock, 60*time.Second); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "service.log"))
		t.Fatalf("podman system service as uid %d did not answer on %s: %v\n%s", uid, sock, err, b)
	}
	return ServiceAs{Socket: "unix://" + sock, Dir: dir}
}

// stopAs ends the service, and a rootless one's pause process, which
// holds its user namespace and mounts, then removes its directory.
func stopAs(cmd *exec.Cmd, dir, run string) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	for _, p := range []string{filepath.Join(run, "tmp", "pause.pid"), filepath.Join(run, "libpod", "tmp", "pause.pid")} {
		if b, err := os.ReadFile(p); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				killWait(pid)
			}
		}
	}
	_ = syscall.Unmount(filepath.Join(dir, "storage", "overlay"), syscall.MNT_DETACH)
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "podmantest: removing %s: %v\n", dir, err)
	}
}

// killWait kills pid and waits a moment for it to be gone (a pause
// process's mounts go with it).
func killWait(pid int) {
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// killUID kills, one by one, the processes whose real uid is name's.
func killUID(name string) {
	u, err := user.Lookup(name)
	if err != nil {
		return
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "Uid:"); ok {
				if f := strings.Fields(rest); len(f) > 0 && f[0] == u.Uid {
					killWait(pid)
				}
			}
		}
	}
}
