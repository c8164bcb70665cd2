package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startAndCrash starts a role's unit, checks who it runs as and its sockets,
// kills its main process with SIGKILL and checks that systemd brings it
// back, with its sockets made anew.
func (w *world) startAndCrash(role string) {
	w.t.Helper()
	unit := w.unit(role)
	start := time.Now()
	w.c.must("systemctl", "start", unit)
	pid := w.waitRunning(unit, "0", "")
	made := w.waitSockets(role, nil)
	w.checkIdentity(role, pid)
	up := time.Since(start)

	w.c.must("sh", "-c", "kill -9 "+pid)
	killed := time.Now()
	again := w.waitRunning(unit, "1", pid)
	w.waitSockets(role, made)
	w.checkIdentity(role, again)
	w.t.Logf("%s: up with its sockets in %v as %s; after SIGKILL of pid %s, back as pid %s with new sockets in %v",
		unit, up.Round(time.Millisecond), w.userOf(role).Name, pid, again, time.Since(killed).Round(time.Millisecond))
}

// checkIdentity reads the main process's status inside: its uids, gids and
// supplementary groups are the plan's user's.
func (w *world) checkIdentity(role, pid string) {
	w.t.Helper()
	u := w.userOf(role)
	status := w.c.must("cat", "/proc/"+pid+"/status")
	field := func(name string) []string {
		for _, l := range strings.Split(status, "\n") {
			if rest, ok := strings.CutPrefix(l, name+":"); ok {
				return strings.Fields(rest)
			}
		}
		return nil
	}
	uid, gid := strconv.Itoa(int(w.users[u.Name])), strconv.Itoa(int(w.groups[u.Name]))
	if got := field("Uid"); !slices.Equal(got, []string{uid, uid, uid, uid}) {
		w.t.Errorf("%s (pid %s) has uids %v, want %s's %s", role, pid, got, u.Name, uid)
	}
	if got := field("Gid"); !slices.Equal(got, []string{gid, gid, gid, gid}) {
		w.t.Errorf("%s (pid %s) has gids %v, want %s's %s", role, pid, got, u.Name, gid)
	}
	want := []string{gid}
	for _, g := range u.Groups {
		want = append(want, strconv.Itoa(int(w.groups[g])))
	}
	got := field("Groups")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		w.t.Errorf("%s (pid %s) has groups %v, want %v (%s and %v)", role, pid, got, want, u.Name, u.Groups)
	}
}

// waitSockets waits until every socket the role listens on exists (made
// after old's, when given: the inode number is no proof, a removed socket's
// is soon reused), then checks each is 0660, the listener's, in its
// directory's group. It returns when each was made.
func (w *world) waitSockets(role string, old []syscall.Timespec) []syscall.Timespec {
	w.t.Helper()
	var socks []Socket
	for _, s := range w.plan.Sockets {
		if s.Listener == w.userOf(role).Name {
			socks = append(socks, s)
		}
	}
	if len(socks) == 0 {
		w.t.Fatalf("the plan has no socket for %s", role)
	}
	made := make([]syscall.Timespec, len(socks))
	for i, s := range socks {
		var st syscall.Stat_t
		w.waitFor(s.Path+" (made anew)", func() (bool, string) {
			err := syscall.Lstat(filepath.Join(w.root, s.Path), &st)
			return err == nil && (old == nil || st.Ctim != old[i]), fmt.Sprintf("%v\n%s", err, w.c.journal(w.unit(role)))
		})
		made[i] = st.Ctim
		if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			w.t.Errorf("%s is not a socket (mode %o)", s.Path, st.Mode)
		}
		dir := w.pathOf(filepath.Dir(s.Path))
		if got, want := w.describe(s.Path), w.want("0660", s.Listener, dir.Group); got != want {
			w.t.Errorf("%s is %s, want %s (%s:%s)", s.Path, got, want, s.Listener, dir.Group)
		}
	}
	return made
}

func (w *world) pathOf(path string) Path {
	for _, p := range w.plan.Paths {
		if p.Path == path {
			return p
		}
	}
	w.t.Fatalf("%s is not in the plan", path)
	return Path{}
}

// startBrokerdWithoutPodman: brokerd Wants= and is After= the tools unit,
// whose Podman is removed from the overlay. The tools unit must fail at once
// (203/EXEC), not hold brokerd's start: its ExecStartPost= waited for
// Podman's socket until TimeoutStartSec= (90 s) before it checked that
// Podman still ran.
func (w *world) startBrokerdWithoutPodman() {
	w.t.Helper()
	start := time.Now()
	w.startAndCrash("brokerd")
	if took := time.Since(start); took > 20*time.Second {
		w.t.Errorf("brokerd's start and restart took %v: the failing tools unit held it", took)
	}
	tools := w.unit("tools")
	w.waitFor(tools+" to fail for want of Podman", func() (bool, string) {
		// Restart=on-failure brings it back every 2 s, so between its
		// failures it waits in auto-restart (ActiveState "activating"); it
		// settles in "failed" only if its start limit is reached in time,
		// which a loaded machine may not do.
		p := w.c.show(tools, "ExecMainStatus", "Result", "ActiveState", "SubState")
		failed := p["ActiveState"] == "failed" || p["SubState"] == "auto-restart"
		return p["ExecMainStatus"] == "203" && failed,
			fmt.Sprintf("%v\n%s", p, w.c.journal(tools))
	})
	w.c.combined("systemctl", "stop", tools)
	w.t.Logf("%s: without Podman it fails with 203/EXEC, and brokerd after it starts at once", tools)
}

// checkGatewaydRefuses: gatewayd without its token is refused by systemd
// (LoadCredential=), and with one it reads the credential and stops at its
// own config check; a Mattermost server would be needed beyond it.
func (w *world) checkGatewaydRefuses() {
	w.t.Helper()
	unit := w.unit("gatewayd")
	w.c.combined("systemctl", "start", unit)
	w.waitFor(unit+" to be refused its missing token", func() (bool, string) {
		p := w.c.show(unit, "ExecMainStatus")
		return p["ExecMainStatus"] == "243", fmt.Sprintf("%v\n%s", p, w.c.journal(unit))
	})
	// Stopped, it is unloaded: reset-failed may find nothing to reset.
	w.c.combined("systemctl", "stop", unit)
	w.c.combined("systemctl", "reset-failed", unit)
	token := filepath.Join(w.root, w.plan.Etc, "gatewayd.token")
	if err := os.WriteFile(token, []byte("a-token-for-the-test\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	w.c.combined("systemctl", "start", unit)
	w.waitFor(unit+" to stop at its config check", func() (bool, string) {
		p := w.c.show(unit, "ExecMainStatus")
		j := w.c.journal(unit)
		return p["ExecMainStatus"] == "1" && strings.Contains(j, "gatewayd.toml:"), fmt.Sprintf("%v\n%s", p, j)
	})
	w.c.combined("systemctl", "stop", unit)
	w.t.Logf("%s: without the token 243/CREDENTIALS; with it, exit 1 at its config check (the seed names no Mattermost owner)", unit)
}

// checkToolsStartPost replaces Podman by a listener that makes its socket
// with the unit's umask (0600, as Podman does) and checks that the tools
// unit, with its own ExecStartPost=, starts and leaves the socket 0660 in
// brokerd's pair group.
func (w *world) checkToolsStartPost() {
	w.t.Helper()
	unit := w.unit("tools")
	sock := filepath.Join(w.plan.Home, "run", "broker-tools", "podman.sock")
	dropin := filepath.Join(w.root, w.plan.UnitDir, unit+".d")
	if err := os.MkdirAll(dropin, 0o755); err != nil {
		w.t.Fatal(err)
	}
	// A second late, so that ExecStartPost='s loop asks whether ${MAINPID}
	// still runs before the socket is there.
	text := "[Service]\nExecStart=\nExecStart=/bin/sh -c \"sleep 1; exec /usr/bin/systemd-socket-activate -l " + sock + " /bin/true\"\n"
	if err := os.WriteFile(filepath.Join(dropin, "stand-in.conf"), []byte(text), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.c.must("systemctl", "daemon-reload")
	w.c.combined("systemctl", "reset-failed", unit)
	if out, err := w.c.combined("systemctl", "start", unit); err != nil {
		w.t.Fatalf("%s with a stand-in for Podman: %v: %s\n%s", unit, err, out, w.c.journal(unit))
	}
	if p := w.c.show(unit, "ActiveState", "SubState"); p["SubState"] != "running" {
		w.t.Errorf("%s with a stand-in for Podman: %v\n%s", unit, p, w.c.journal(unit))
	}
	if got, want := w.describe(sock), w.want("0660", w.plan.UserFor("tools"), w.pathOf(filepath.Dir(sock)).Group); got != want {
		w.t.Errorf("%s after the tools unit started is %s, want %s", sock, got, want)
	}
	w.t.Logf("%s: with a stand-in listener, ExecStartPost= made %s 0660", unit, sock)
}

// checkEnableNow starts the roles as docs/running.md's install steps do,
// all at once from stopped (`systemctl enable --now`), as a boot would, and
// checks that each runs and makes its sockets anew. Type=simple orders
// loopd after the others' exec, not after their sockets: if its self-test
// came too early it would fail and come back 2 s later, so the restarts
// are reported, not held to 0.
func (w *world) checkEnableNow() {
	w.t.Helper()
	roles := []string{"inferproxy", "brokerd", "loopd"}
	var units []string
	made := map[string][]syscall.Timespec{}
	for _, r := range roles {
		units = append(units, w.unit(r))
		made[r] = w.waitSockets(r, nil)
	}
	w.c.must(append([]string{"systemctl", "stop"}, units...)...)
	start := time.Now()
	w.c.must(append([]string{"systemctl", "enable", "--now"}, units...)...)
	var report []string
	for _, r := range roles {
		w.waitSockets(r, made[r])
		p := w.c.show(w.unit(r), "SubState", "NRestarts")
		if p["SubState"] != "running" {
			w.t.Errorf("%s after enable --now: %v\n%s", w.unit(r), p, w.c.journal(w.unit(r)))
		}
		report = append(report, fmt.Sprintf("%s (restarts %s)", r, p["NRestarts"]))
	}
	w.t.Logf("systemctl enable --now: %s running with their sockets in %v", strings.Join(report, ", "), time.Since(start).Round(time.Millisecond))
}
