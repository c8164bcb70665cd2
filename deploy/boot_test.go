package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// staticTags are the Podman bindings' build tags (docs/decisions.md,
// "Podman build tags"); the binary is static, as `just build` makes it.
const staticTags = "remote,exclude_graphdriver_btrfs,btrfs_noversion,exclude_graphdriver_devicemapper,containers_image_openpgp"

// treeOwner is the human of the deployment inside the tree.
const treeOwner = "bxowner"

// TestUnitsUnderBootedSystemd runs the generated units under a real,
// booted systemd: a throwaway overlay of the Debian 12 tree
// .ci/systemd-setup caches, booted with systemd-nspawn. Inside, `boxmaker
// deploy apply` makes the DEFAULT plan (the container cannot touch the
// host), and the test checks:
//
//   - the tmpfiles.d file at boot: a run/ directory removed and one made
//     0750 before boot come back 2710 with the plan's group, and every
//     directory of the home has the plan's owner, group and mode;
//   - systemd-analyze verify of every unit with the real users there, and
//     systemd-analyze security live, held to exposureLimit;
//   - inferproxy, brokerd and loopd start, each as its plan user with the
//     plan's groups, make their sockets with the plan's mode and group, and
//     come back after SIGKILL (Restart=on-failure, RestartSec=2s) with new
//     sockets. loopd needs a model at start (its self-test asks the model
//     server, through infer.sock, for /health, the context and the special
//     tokens): the repository's stand-in runs as a transient unit on
//     127.0.0.1:8080, the seed inferproxy.toml's upstream;
//   - what cannot start there fails the expected way, and fast. Podman is
//     removed from this test's overlay: the tools unit fails with 203/EXEC, and brokerd,
//     ordered after it, still starts at once (without an image brokerd
//     runs no tool, so it needs no Podman to start). With a stand-in for
//     Podman's listener (systemd-socket-activate, through a drop-in) the
//     tools unit's ExecStartPost= sees the socket and makes it 0660.
//     gatewayd needs its token (without it systemd refuses with
//     243/CREDENTIALS) and a Mattermost server: with a token it gets as far
//     as its own config check (the seed names no owners) and exits 1;
//   - poweroff leaves no process behind.
func TestUnitsUnderBootedSystemd(t *testing.T) {
	began := time.Now()
	tree := systemdTree(t)
	bin := buildStatic(t)
	built := time.Now()
	root := overlay(t, tree)
	// This test checks what happens without Podman (the tree has it, for
	// TestStartUnderBootedSystemd): removed from this overlay alone.
	if err := os.Remove(filepath.Join(root, "usr/bin/podman")); err != nil {
		t.Fatal(err)
	}
	plan := New(Default())
	installAndApply(t, root, bin, plan)
	w := &world{t: t, root: root, plan: plan,
		users: readIDs(t, filepath.Join(root, "etc/passwd")), groups: readIDs(t, filepath.Join(root, "etc/group"))}
	w.prepareHome()
	w.maskRootPodman()
	prepared := time.Now()
	w.c = boot(t, root)
	booted := time.Now()

	w.checkTmpfilesAtBoot()
	w.verifyInside()
	w.scoreInside()
	w.startModel()
	w.startAndCrash("inferproxy")
	w.startBrokerdWithoutPodman()
	w.startAndCrash("loopd")
	w.checkGatewaydRefuses()
	w.checkToolsStartPost()
	w.checkEnableNow()
	checked := time.Now()
	off := w.c.poweroff()
	t.Logf("times: build %v, overlay and apply %v, boot %v, checks %v, poweroff %v; whole test %v",
		built.Sub(began).Round(time.Millisecond), prepared.Sub(built).Round(time.Millisecond), booted.Sub(prepared).Round(time.Millisecond),
		checked.Sub(booted).Round(time.Millisecond), off.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// world is the booted tree and what the test knows of it.
type world struct {
	t    *testing.T
	root string
	plan Plan
	c    *container
	// users and groups are the tree's ids by name.
	users, groups map[string]uint32
}

func buildStatic(t *testing.T, ldflags ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{{"boxmaker", ".."}, {"fakellama", "../internal/fakellama/cmd/fakellama"}} {
		args := []string{"build", "-tags", staticTags, "-o", filepath.Join(dir, b.out)}
		if len(ldflags) > 0 {
			args = append(args, "-ldflags", strings.Join(ldflags, " "))
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return dir
}

// installAndApply installs the binaries, makes the owner's account and runs
// deploy apply in the tree, as an installer would (chroot: before boot, so
// that the boot is the deployment's first).
func installAndApply(t *testing.T, root, bin string, plan Plan) {
	t.Helper()
	copyBinaries(t, bin, filepath.Join(root, "usr/local/bin"))
	chroot(t, root, "useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", treeOwner)
	out := chroot(t, root, filepath.Join(plan.Bin, "boxmaker"), "deploy", "apply", "--owner", treeOwner)
	if !strings.HasSuffix(out, "changes made") {
		t.Fatalf("deploy apply in the tree said:\n%s", out)
	}
}

// copyBinaries copies the built boxmaker and fakellama from bin into dir.
func copyBinaries(t *testing.T, bin, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"boxmaker", "fakellama"} {
		b, err := os.ReadFile(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func chroot(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("chroot", append([]string{root}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chroot %s %v: %v\n%s", root, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// prepareHome writes what the owner would (the core memory, which loopd
// reads at start) and undoes two directories for the boot to redo.
func (w *world) prepareHome() {
	t := w.t
	core := filepath.Join(w.root, w.plan.Home, "memory", "core.md")
	if err := os.WriteFile(core, []byte("The owner's core memory.\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(core, 0, int(w.groups[w.plan.UserFor("loopd")])); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(w.root, w.plan.Home, "run", "loop-infer")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(w.root, w.plan.Home, "run", "owner-loop"), 0o750); err != nil {
		t.Fatal(err)
	}
}

// checkTmpfilesAtBoot: systemd-tmpfiles-setup ran the plan's tmpfiles.d
// file without an error, and every directory of the home is the plan's,
// the two undone before boot included.
func (w *world) checkTmpfilesAtBoot() {
	t := w.t
	if p := w.c.show("systemd-tmpfiles-setup.service", "ActiveState", "Result"); p["ActiveState"] != "active" || p["Result"] != "success" {
		t.Errorf("systemd-tmpfiles-setup at boot: %v\n%s", p, w.c.journal("systemd-tmpfiles-setup.service"))
	}
	n := 0
	for _, p := range w.plan.Paths {
		if p.Kind != KindDir || (p.Path != w.plan.Home && !strings.HasPrefix(p.Path, w.plan.Home+"/")) {
			continue
		}
		n++
		if got, want := w.describe(p.Path), w.want(p.Mode, p.Owner, p.Group); got != want {
			t.Errorf("%s after boot is %s, the plan's is %s", p.Path, got, want)
		}
	}
	t.Logf("after boot, the home's %d directories are the plan's (run/loop-infer removed and run/owner-loop made 0750 before boot)", n)
}

// describe is a path in the tree as mode, uid and gid.
func (w *world) describe(path string) string {
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(w.root, path), &st); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%04o %d:%d", st.Mode&0o7777, st.Uid, st.Gid)
}

func (w *world) want(mode, owner, group string) string {
	u, ok1 := w.users[owner]
	g, ok2 := w.groups[group]
	if !ok1 || !ok2 {
		w.t.Fatalf("the tree has no user %s or no group %s", owner, group)
	}
	return fmt.Sprintf("%s %d:%d", mode, u, g)
}

// verifyInside runs systemd-analyze verify on every unit in the booted
// system. Only the tools unit's Podman may be missing: it is removed from this overlay.
func (w *world) verifyInside() {
	for _, u := range w.plan.Units {
		out, err := w.c.combined("systemd-analyze", "verify", "--man=no", filepath.Join(w.plan.UnitDir, u.Name))
		if u.Role == "tools" && out == u.Name+": Command /usr/bin/podman is not executable: No such file or directory" {
			continue
		}
		if err != nil || out != "" {
			w.t.Errorf("systemd-analyze verify %s inside: %v\n%s", u.Name, err, out)
		}
	}
}

// scoreInside scores every unit with systemd-analyze security, live.
func (w *world) scoreInside() {
	var scores []string
	for _, u := range w.plan.Units {
		out, err := w.c.combined("systemd-analyze", "security", u.Name)
		m := exposure.FindStringSubmatch(out)
		if err != nil || m == nil {
			w.t.Errorf("systemd-analyze security %s inside: %v\n%s", u.Name, err, out)
			continue
		}
		score, _ := strconv.ParseFloat(m[1], 64)
		limit := exposureLimit(u.Role)
		scores = append(scores, fmt.Sprintf("%s %.1f", u.Role, score))
		if score > limit {
			w.t.Errorf("%s: live exposure %.1f, over %.1f:\n%s", u.Name, score, limit, keepFailing(out))
		}
	}
	w.t.Logf("systemd-analyze security, live: %s", strings.Join(scores, ", "))
}

// startModel runs the stand-in model where the seed inferproxy.toml points.
func (w *world) startModel() {
	w.c.must("systemd-run", "--unit=bxboot-model", "--property=DynamicUser=yes", "/usr/local/bin/fakellama", "-listen", "127.0.0.1:8080")
	w.waitFor("the stand-in model to listen", func() (bool, string) {
		j := w.c.journal("bxboot-model.service")
		return strings.Contains(j, "on http://127.0.0.1:8080"), j
	})
}

// waitFor polls cond for 15 s (RestartSec is 2 s); it fails with cond's
// last words.
func (w *world) waitFor(what string, cond func() (bool, string)) {
	w.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, say := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("waited 15 s for %s:\n%s", what, say)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) unit(role string) string { return w.plan.Prefix + role + ".service" }

func (w *world) userOf(role string) User {
	for _, u := range w.plan.Users {
		if u.Role == role {
			return u
		}
	}
	w.t.Fatalf("no user for %s in the plan", role)
	return User{}
}

// waitRunning waits for a unit to run with restarts restarts and a main pid
// other than old, and returns that pid.
func (w *world) waitRunning(unit, restarts, old string) string {
	w.t.Helper()
	var pid string
	w.waitFor(unit+" to run (restarts "+restarts+")", func() (bool, string) {
		p := w.c.show(unit, "MainPID", "SubState", "NRestarts", "Result")
		pid = p["MainPID"]
		return p["SubState"] == "running" && p["NRestarts"] == restarts && pid != "0" && pid != old,
			fmt.Sprintf("%v\n%s", p, w.c.journal(unit))
	})
	return pid
}
