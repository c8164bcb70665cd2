package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartUnderBootedSystemd is issue 27's booted test: in a booted copy
// of the Debian 12 tree (with Podman, runc, uidmap and busybox-static, as
// docs/running.md installs them), a build's boxmaker, run from where it
// was built, installs itself and makes the plan (by chroot, before boot,
// as TestUnitsUnderBootedSystemd does), and then, the owner having written
// a grant, `deploy apply --start` as root
// brings the deployment up (the tools unit's rootless Podman, the tool
// image built as brokerd's user, brokerd's startup probe running a real
// container there, loopd against the stand-in model), `bxctl grants check
// --fix` gives the tools and brokerd the ACLs the owner's 0700 folders
// need, then the owner chats:
// a shell call under an auto grant runs in a rootless container of the
// tools unit and reads the owner's folder, a call with no grant is denied,
// a read_file under an ask grant runs once the owner approves it with
// bxctl approve, `bxctl audit verify` passes, and `bxctl doctor` passes as
// the owner and as root. Then the build is upgraded, mid-session, to a
// rebuilt binary (deploy upgrade): the session continues on the new build
// and doctor passes again. Last, `deploy remove` and `deploy apply
// --start` again (removeAndReinstall), after which audit verify still
// passes on the kept chain.
//
// Inside the tree only: the tools user's home (Podman's storage) is a
// directory of the host's file system bound in, since overlayfs (the
// container's root) cannot hold Podman's overlay storage;
// systemd-nspawn's own seccomp filter refuses the
// keyring system calls (runc makes each container a session keyring), so
// the container is booted with --system-call-filter=@keyring, which a real
// host needs no flag for; and on a cgroup v1 host brokerd.toml accepts the
// limits rootless Podman cannot enforce (docs/runbook.md#tool-limits-not-enforced).
func TestStartUnderBootedSystemd(t *testing.T) {
	began := time.Now()
	tree := systemdTree(t)
	if _, err := os.Stat(filepath.Join(tree, "usr/bin/podman")); err != nil {
		t.Fatalf("the tree at %s has no Podman (%v); %s", tree, err, setupHint)
	}
	bin := buildStatic(t)
	root := overlay(t, tree)
	plan := New(Default())
	// As a newcomer: the build's own boxmaker, not yet installed, makes
	// the plan and installs itself where the units point.
	copyBinaries(t, bin, filepath.Join(root, "opt/build"))
	chroot(t, root, "useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", treeOwner)
	// With /proc, which tells boxmaker which file it is running from.
	proc := filepath.Join(root, "proc")
	if err := syscall.Mount("proc", proc, "proc", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(proc, syscall.MNT_DETACH) }) // if the apply failed; before the overlay's
	applied := chroot(t, root, "/opt/build/boxmaker", "deploy", "apply", "--owner", treeOwner)
	if err := syscall.Unmount(proc, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(applied, "\ninstall /opt/build/boxmaker as "+plan.Bin+"/boxmaker (root's, 0755)\n") || !strings.HasSuffix(applied, "changes made") {
		t.Fatalf("deploy apply from the build said:\n%s", applied)
	}
	w := &world{t: t, root: root, plan: plan,
		users: readIDs(t, filepath.Join(root, "etc/passwd")), groups: readIDs(t, filepath.Join(root, "etc/group"))}
	scratch, notes := w.prepareOwnerFolders()
	w.acceptUnenforcedOnV1()
	storage := w.toolsStorage()
	w.maskRootPodman()
	prepared := time.Now()
	w.c = boot(t, root, "--system-call-filter=@keyring", "--bind="+storage+":"+plan.Home+"/tools")
	w.c.must("systemd-run", "--unit=bxboot-model", "--property=DynamicUser=yes", "/opt/build/fakellama",
		"-listen", "127.0.0.1:8080", "-scratch", scratch, "-notes", notes)
	w.waitFor("the stand-in model to listen", func() (bool, string) {
		j := w.c.journal("bxboot-model.service")
		return strings.Contains(j, "on http://127.0.0.1:8080"), j
	})
	booted := time.Now()

	out, err := w.c.within(5*time.Minute, "/opt/build/boxmaker", "deploy", "apply", "--start", "--owner", treeOwner)
	if err != nil || !strings.HasSuffix(out, "ok: check that every started role is active and answers on its sockets: inferproxy, brokerd, loopd") {
		t.Fatalf("deploy apply --start: %v\n%s\n%s", err, out, w.c.journal(w.unit("brokerd")))
	}
	for _, line := range []string{"nothing to change: the system is the plan", "ok: start boxmaker-tools.service",
		"ok: build the tool image as boxmaker-brokerd: sha256:", `ok: set [podman] image = "auto"`,
		"ok: make sure the core memory exists (loopd starts no session without it): wrote an empty " + plan.Home + "/memory/core.md",
		"ok: leave boxmaker-gatewayd.service stopped: no Mattermost url"} {
		if !strings.Contains(out, line) {
			t.Errorf("deploy apply --start printed no %q:\n%s", line, out)
		}
	}
	// The owner's folders are 0700: the grants' ACLs, made by --fix.
	fixed, err := w.c.within(time.Minute, filepath.Join(w.plan.Bin, "bxctl"), "grants", "check", "--fix")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(fixed), " changes made") ||
		!strings.Contains(fixed, "/home/"+treeOwner+": access ACL: added u:") {
		t.Fatalf("bxctl grants check --fix: %v\n%s", err, fixed)
	}
	t.Logf("bxctl grants check --fix:\n%s", fixed)
	started := time.Now()

	// The owner's chat: an auto shell call in a tool container.
	said := w.owner(filepath.Join(w.plan.Bin, "bxctl"), "chat", "--say", "run: cat hello.txt; id -u")
	if !strings.Contains(said, "hello from the owner's folder") || !strings.Contains(said, "65534") {
		t.Errorf("the shell call's turn:\n%s\n%s", said, w.c.journal(w.unit("brokerd")))
	}
	// A call no grant allows.
	denied := w.owner(filepath.Join(w.plan.Bin, "bxctl"), "chat", "--say", "fetch the web page")
	if !strings.Contains(denied, "no_grant") {
		t.Errorf("the http_fetch turn (no grant):\n%s", denied)
	}
	approved := w.approvedCall()
	verified := w.owner(filepath.Join(w.plan.Bin, "bxctl"), "audit", "verify")
	// Two records for each call that ran (its decision, then its result),
	// one for the denial, and the approval between the ask's two.
	if !strings.HasPrefix(verified, "audit: ok, 6 records, head ") {
		t.Errorf("audit verify: %s", verified)
	}
	// bxctl doctor, as the owner (brokerd's and loopd's own checks) and
	// as root (each socket's peer rule).
	doctor := w.owner(filepath.Join(w.plan.Bin, "bxctl"), "doctor")
	for _, line := range []string{"ok: unit boxmaker-tools.service: active\n", "ok: brokerd tool runtime: image ",
		"ok: brokerd grants: the grant files load with no problem\n", "ok: audit chain: 6 records, head ",
		"ok: loopd model: answers through ", "ok: loopd brokerd: "} {
		if !strings.Contains(doctor, line) {
			t.Errorf("bxctl doctor as the owner printed no %q:\n%s", line, doctor)
		}
	}
	if !strings.Contains(doctor, "\ndoctor: all ") || strings.Contains(doctor, "FAIL") {
		t.Errorf("bxctl doctor as the owner:\n%s", doctor)
	}
	rootDoctor, err := w.c.within(time.Minute, filepath.Join(w.plan.Bin, "bxctl"), "doctor")
	if err != nil || !strings.Contains(rootDoctor, "ok: socket "+plan.Home+"/run/owner-broker/admin.sock: answers as boxmaker-brokerd, and its [peers] rule refuses root\n") ||
		!strings.Contains(rootDoctor, "\ndoctor: all ") {
		t.Errorf("bxctl doctor as root: %v\n%s", err, rootDoctor)
	}
	t.Logf("deploy apply --start:\n%s\nchat, shell:\n%s\nchat, denied:\n%s\nchat, approved:\n%s\naudit verify: %s\ndoctor:\n%s\nas root:\n%s",
		out, said, denied, approved, verified, doctor, rootDoctor)
	chatted := time.Now()
	w.upgradeMidSession(said)
	upgraded := time.Now()

	// Uninstalled and installed again on the kept state: the audit chain
	// goes on (brokerd checks its head at start).
	removed := w.removeAndReinstall()
	reverified := w.owner(filepath.Join(w.plan.Bin, "bxctl"), "audit", "verify")
	if !strings.HasPrefix(reverified, "audit: ok, ") || strings.HasPrefix(reverified, "audit: ok, 0 records") {
		t.Errorf("audit verify after remove and apply: %s", reverified)
	}
	t.Logf("deploy remove:\n%s\naudit verify after apply again: %s", removed, reverified)
	reinstalled := time.Now()
	off := w.c.poweroff()
	t.Logf("times: overlay and apply %v, boot %v, deploy apply --start %v, chats, verify and doctor %v, rebuild and upgrade %v, remove and apply again %v, poweroff %v; whole test %v",
		prepared.Sub(began).Round(time.Millisecond), booted.Sub(prepared).Round(time.Millisecond), started.Sub(booted).Round(time.Millisecond),
		chatted.Sub(started).Round(time.Millisecond), upgraded.Sub(chatted).Round(time.Millisecond), reinstalled.Sub(upgraded).Round(time.Millisecond),
		off.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// upgradeMidSession rebuilds boxmaker (another version string, so other
// bytes and another tool layer), runs deploy upgrade to it as root, and
// continues the session the first chat began: its next turn is served by
// the new build, with the call in a container of the new image, and the
// owner's doctor passes on it.
func (w *world) upgradeMidSession(firstTurn string) {
	t := w.t
	_, rest, ok := strings.Cut(firstTurn, "[session ")
	session, _, _ := strings.Cut(rest, ",")
	if !ok || session == "" {
		t.Fatalf("no session in the first turn:\n%s", firstTurn)
	}
	copyBinaries(t, buildStatic(t, "-X main.version=v0.0.0-upgraded"), filepath.Join(w.root, "opt/build2"))
	out, err := w.c.within(5*time.Minute, filepath.Join(w.plan.Bin, "boxmaker"), "deploy", "upgrade", "/opt/build2/boxmaker")
	if err != nil || !strings.Contains(out, "ok: build the tool image with the new build as boxmaker-brokerd: sha256:") ||
		!strings.Contains(out, "(built)") || !strings.Contains(out, "\nok: check the deployment ("+w.plan.Bin+"/bxctl doctor): doctor: all ") {
		t.Fatalf("deploy upgrade: %v\n%s\n%s", err, out, w.c.journal(w.unit("brokerd")))
	}
	if v := w.owner(filepath.Join(w.plan.Bin, "boxmaker"), "version"); !strings.Contains(v, "v0.0.0-upgraded") {
		t.Errorf("after the upgrade, boxmaker version says %q", v)
	}
	again := w.owner(filepath.Join(w.plan.Bin, "bxctl"), "chat", "--session", session, "--say", "run: cat hello.txt; id -u")
	if !strings.Contains(again, "[session "+session+", epoch ") || !strings.Contains(again, "hello from the owner's folder") {
		t.Errorf("the session after the upgrade:\n%s\n%s", again, w.c.journal(w.unit("loopd")))
	}
	doctor := w.owner(filepath.Join(w.plan.Bin, "bxctl"), "doctor")
	if strings.Contains(doctor, "FAIL") || !strings.Contains(doctor, "ok: audit chain: 8 records, head ") {
		t.Errorf("bxctl doctor after the upgrade:\n%s", doctor)
	}
	t.Logf("deploy upgrade:\n%s\nthe session, continued:\n%s\ndoctor:\n%s", out, again, doctor)
}

// acceptUnenforcedOnV1 uncomments the seed brokerd.toml's
// accept_unenforced on a host without the cgroup v2 unified hierarchy,
// as docs/running.md tells the owner to.
func (w *world) acceptUnenforcedOnV1() {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return
	}
	path := filepath.Join(w.root, w.plan.Etc, "brokerd.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		w.t.Fatal(err)
	}
	const line = `# accept_unenforced = ["memory", "pids", "cpu"]`
	if !strings.Contains(string(data), line) {
		w.t.Fatalf("the seed brokerd.toml has no %q:\n%s", line, data)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), line, line[2:], 1)), 0o640); err != nil {
		w.t.Fatal(err)
	}
}

// owner runs a command inside as the owner, with the owner's groups; its
// output, failing the test on an error.
func (w *world) owner(args ...string) string {
	w.t.Helper()
	out, err := w.c.within(2*time.Minute, append([]string{"runuser", "-u", treeOwner, "--"}, args...)...)
	if err != nil {
		w.t.Fatalf("%s as %s: %v\n%s", strings.Join(args, " "), treeOwner, err, out)
	}
	return out
}

// within is combined, bounded by d rather than 30 s.
func (c *container) within(d time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	b, err := c.command(ctx, args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s: did not finish within %v", strings.Join(args, " "), d)
	}
	return strings.TrimSpace(string(b)), err
}

// toolsStorage is a directory of the host's file system, with the plan's
// owner and mode for the tools user's home, for nspawn to bind there.
func (w *world) toolsStorage() string {
	p := w.pathOf(w.plan.Home + "/tools")
	dir := filepath.Join(filepath.Dir(w.root), "tools-storage")
	if err := os.Mkdir(dir, 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chown(dir, int(w.users[p.Owner]), int(w.groups[p.Group])); err != nil {
		w.t.Fatal(err)
	}
	return dir
}

// maskRootPodman masks the root Podman units Debian's package enables:
// this deployment's Podman is the tools unit's, and theirs fail to start in
// the container (nothing of boxmaker needs them).
func (w *world) maskRootPodman() {
	for _, u := range []string{"podman.service", "podman.socket", "podman-restart.service", "podman-auto-update.service", "podman-auto-update.timer"} {
		if err := os.Symlink("/dev/null", filepath.Join(w.root, "etc/systemd/system", u)); err != nil && !os.IsExist(err) {
			w.t.Fatal(err)
		}
	}
}
