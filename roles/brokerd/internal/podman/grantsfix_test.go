package podman

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/roles/bxctl"
)

// TestGrantsFixRootless: with the deployment's layout (rootless Podman as
// a tools user, brokerd its client as its own user) and an owner whose
// home is 0700, as Debian 12 makes it, a shell call under a writable grant
// of a folder in that home fails (and with the home searchable by all, it
// still cannot write); after `bxctl grants check --fix` (the
// real command, reading /etc and a brokerd.toml) the same call writes
// there, and the file is the tools' host uid's: subuid start + 65533. A
// second --fix changes nothing. (An end-to-end test may join roles in one
// process, M3a §12: bxctl is linked into this test only.)
func TestGrantsFixRootless(t *testing.T) {
	prefix := testPrefix("f")
	h := newToolsHost(t, prefix)
	image := podmantest.Image(t, h.svc.Socket)
	owner := addOwner(t, prefix)
	work := filepath.Join(owner.home, "work")
	mkdirAs(t, work, owner.Uid, owner.Gid, 0o700)

	grants := filepath.Join(h.home, "broker", "grants")
	mkdirAs(t, grants, h.brokerd.Uid, h.brokerd.Gid, 0o700)
	p := filepath.Join(grants, "work.toml")
	if err := os.WriteFile(p, []byte(grant("shell", fmt.Sprintf("paths = [%q]", work))), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(p, h.brokerd.Uid, h.brokerd.Gid)

	cfg := DefaultConfig()
	cfg.Socket, cfg.Image, cfg.TimeoutMS, cfg.SharedDir = h.svc.Socket, image, 20_000, h.shared
	cfg.AcceptUnenforced = []string{"memory", "pids", "cpu"} // cgroup v1 here (TestRootlessToolsUser)
	out := filepath.Join(work, "out.txt")
	shell := fmt.Sprintf(`{"command":"echo written > %s && id -u","cwd":%q}`, out, work)
	spec := childSpec{Config: cfg, State: filepath.Join(h.home, "broker", "podman"), Grants: grants, Shell: shell}

	// With the home searchable by all (0711), brokerd and the runtime
	// reach the folder, but the tools' uid may not write in it: the ACL on
	// the folder is what makes the write work, not the search alone.
	os.Chmod(owner.home, 0o711)
	searchOnly := runAsBrokerd(t, h, spec)
	if searchOnly.Err != "" || strings.Contains(searchOnly.Shell, "65534") || !strings.Contains(searchOnly.Shell, "ermission denied") {
		t.Fatalf("home 0711, folder 0700: %+v, want the write refused inside the container", searchOnly)
	}
	t.Logf("home 0711, no ACL: %s", searchOnly.Shell)
	os.Chmod(owner.home, 0o700)

	before := runAsBrokerd(t, h, spec)
	if before.Err != "" || strings.HasPrefix(before.Shell, "result: ") {
		t.Fatalf("before --fix: %+v, want the call to fail", before)
	}
	t.Logf("before --fix: %s", before.Shell)

	config := filepath.Join(h.home, "brokerd.toml")
	toml := fmt.Sprintf("[paths]\nhome = %q\ngrants = %q\n\n[podman]\nsocket = %q\n", h.home, grants, h.svc.Socket)
	if err := os.WriteFile(config, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	fix := func() (int, string) {
		var stdout, stderr bytes.Buffer
		code := bxctl.Main("bxctl", []string{"grants", "check", "--fix", "--config", config, "--prefix", prefix},
			strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	sub := podmantest.SubIDStart(t, h.tools.Name)
	code, got := fix()
	want := fmt.Sprintf("%s: access ACL: added u:%d:--x, added u:%d:--x; mask --x\n", owner.home, h.tools.Uid, h.brokerd.Uid) +
		fmt.Sprintf("%s: access ACL: added u:%d:rwx; mask rwx\n", work, sub+65533) +
		fmt.Sprintf("%s: default ACL: set to u::rwx,u:%d:rwx,u:%d:rwx,g::---,m::rwx,o::--- (it had none)\n", work, owner.Uid, sub+65533) +
		"grants check --fix: 3 changes made\n"
	if owner.Uid > sub+65533 {
		t.Fatalf("the owner's uid %d sorts after the tools' %d: fix the expected line", owner.Uid, sub+65533)
	}
	if code != 0 || got != want {
		t.Fatalf("--fix: exit %d\n%s\nwant\n%s", code, got, want)
	}

	after := runAsBrokerd(t, h, spec)
	if after.Err != "" || after.Shell != "result: 65534\n" {
		t.Fatalf("after --fix: %+v", after)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(out, &st); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "written\n" || int(st.Uid) != sub+65533 {
		t.Errorf("%s: %q, owner %d; want \"written\" by %d (subuid start %d + 65533)", out, b, st.Uid, sub+65533, sub)
	}
	if code, got := fix(); code != 0 || got != "grants check --fix: nothing to change: every granted path is already reachable by the tools\n" {
		t.Errorf("second --fix: exit %d\n%s", code, got)
	}
}

type ownerUser struct {
	podmantest.User
	home string
}

// addOwner makes an owner user with a 0700 home, in the owner group
// (<prefix>owner), under a folder others may search (as /home is).
func addOwner(t *testing.T, prefix string) ownerUser {
	t.Helper()
	homes, err := os.MkdirTemp("", "bxhomes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(homes) })
	os.Chmod(homes, 0o755)
	name := prefix + "kyle"
	home := filepath.Join(homes, "kyle")
	if out, err := exec.Command("useradd", "-M", "-d", home, "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u := podmantest.User{Name: name}
	if out, err := exec.Command("id", "-u", name).Output(); err == nil {
		fmt.Sscan(string(out), &u.Uid)
	}
	if out, err := exec.Command("id", "-g", name).Output(); err == nil {
		fmt.Sscan(string(out), &u.Gid)
	}
	mkdirAs(t, home, u.Uid, u.Gid, 0o700)
	podmantest.AddGroup(t, prefix+"owner", name)
	return ownerUser{u, home}
}
