package harness_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"boxmaker/deploy"
)

// Issue 29, class 3: each role's user attacks the others on a running
// deployment, one at a time, beyond the plan's access matrix (which
// TestDeployed's "access matrix" checks cell by cell).

// subjectUser is the OS user a subject of the matrix runs as.
func subjectUser(plan deploy.Plan, subject, owner string) string {
	if subject == "owner" {
		return owner
	}
	return plan.UserFor(subject)
}

// roleProc is one long-lived process of a role's user.
type roleProc struct {
	role, user string
	pid        int
}

// roleProcs finds each role's main process, and the tools user's Podman
// service, from /proc: by real uid and the name it was started as.
func roleProcs(t *testing.T, plan deploy.Plan) []roleProc {
	t.Helper()
	var out []roleProc
	for _, u := range plan.Users {
		pu, err := user.Lookup(u.Name)
		if err != nil {
			t.Fatal(err)
		}
		want := u.Role
		if u.Role == "tools" {
			want = "podman"
		}
		entries, _ := os.ReadDir("/proc")
		found := 0
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || realUID(pid) != pu.Uid {
				continue
			}
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			args := strings.Split(string(argv), "\x00")
			if filepath.Base(args[0]) == want && (want != "podman" || slices.Contains(args, "service")) {
				out = append(out, roleProc{u.Role, u.Name, pid})
				found++
			}
		}
		if found == 0 {
			t.Fatalf("no process of %s (%s) is running", u.Role, u.Name)
		}
	}
	return out
}

func realUID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			return f[1]
		}
	}
	return ""
}

// Every subject tries to read every other role's process: its environment,
// open files, memory maps and memory must be refused (the kernel's ptrace
// access check on another uid), whatever the role. Its command line and
// status are readable by every user on the host (the tools unit has no
// ProtectProc=, and a human is in no unit): they must carry no secret.
// The roles that hold secrets (brokerd: the secrets' values and its
// egress CA's keys; gatewayd: the Mattermost token) are non-dumpable, so
// even another process of their own user is refused.
var holdsSecrets = map[string]bool{"brokerd": true, "gatewayd": true}

func procOfOtherRoles(t *testing.T, root string, plan deploy.Plan, owner string, secrets []string) {
	procs := roleProcs(t, plan)
	private := []string{"environ", "fd", "maps", "mem"}
	for _, p := range procs {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.pid, f))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				if strings.Contains(string(b), s) {
					t.Errorf("%s (pid %d) has a secret in its %s", p.role, p.pid, f)
				}
			}
		}
	}
	probe := filepath.Join(root, "bin", "probe")
	cells := 0
	for _, subject := range deploy.Subjects {
		name := subjectUser(plan, subject, owner)
		var ask []probeCell
		for _, p := range procs {
			if p.user == name && !holdsSecrets[p.role] {
				continue // its own: nothing to attack
			}
			for _, f := range private {
				ask = append(ask, probeCell{Op: "read", Path: fmt.Sprintf("/proc/%d/%s", p.pid, f)})
			}
		}
		for _, c := range runProbe(t, probe, name, ask) {
			if c.Got != "refused" {
				t.Errorf("%s (%s) read %s: %s", subject, name, c.Path, c.Got)
			}
			cells++
		}
	}
	if !t.Failed() {
		t.Logf("%d reads of another role's /proc/<pid>/{%s} (or of brokerd's and gatewayd's by their own user), every one refused", cells,
			strings.Join(private, ","))
	}
}

// No role's user listens where file modes do not guard: a TCP or UDP port
// (every local user reaches it) or a Unix socket in the abstract namespace
// (no file, so no mode: every process in the network namespace reaches it).
// Read as root in the roles' own network namespace: the harness runs them
// in the host's, as systemd runs all but loopd.
func noUnguardedListener(t *testing.T, plan deploy.Plan) {
	uids := map[string]string{}
	for _, u := range plan.Users {
		pu, err := user.Lookup(u.Name)
		if err != nil {
			t.Fatal(err)
		}
		uids[pu.Uid] = u.Name
	}
	for _, file := range []string{"tcp", "tcp6", "udp", "udp6"} {
		for _, f := range procNet(t, file) {
			if len(f) > 7 && uids[f[7]] != "" && (f[3] == "0A" || strings.HasPrefix(file, "udp")) {
				t.Errorf("%s listens on %s %s: any local user reaches it, whatever the file modes", uids[f[7]], file, f[1])
			}
		}
	}
	// Abstract Unix sockets that listen (flag __SO_ACCEPTCON), by inode,
	// then the processes of the plan's users that hold one.
	abstract := map[string]string{}
	for _, f := range procNet(t, "unix") {
		if len(f) > 7 && strings.HasPrefix(f[7], "@") {
			if flags, err := strconv.ParseUint(f[3], 16, 32); err == nil && flags&0x10000 != 0 {
				abstract["socket:["+f[6]+"]"] = f[7]
			}
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || uids[realUID(pid)] == "" {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && abstract[target] != "" {
				t.Errorf("%s (pid %d) listens on the abstract Unix socket %s: no file mode guards it", uids[realUID(pid)], pid, abstract[target])
			}
		}
	}
}

func procNet(t *testing.T, name string) [][]string {
	f, err := os.Open("/proc/net/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		out = append(out, strings.Fields(sc.Text()))
	}
	return out
}

// Every file and directory the roles made at run time (under the home and
// the configuration directory, beyond the plan's own paths) is readable
// and writable only by those meant to: its role; the owner group reads the
// audit log; the tools user reads what brokerd shares in run/tools-broker
// (the seccomp profile), and nothing else of brokerd's. The oracle is the
// layout's intent (docs/layout.md), not the modes, so a file a role makes
// too open is caught.
func runtimeFiles(t *testing.T, root string, plan deploy.Plan, owner string) {
	inPlan := map[string]bool{}
	for _, p := range plan.Paths {
		inPlan[p.Path] = true
	}
	var paths []string
	for _, top := range []string{plan.Home, plan.Etc} {
		err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path == filepath.Join(plan.Home, "tools") {
				return fs.SkipDir // Podman's storage: the tools user's, 0700, in the matrix
			}
			if !inPlan[path] && d.Type()&fs.ModeSocket == 0 {
				paths = append(paths, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(paths) == 0 {
		t.Fatal("the roles made no file at all")
	}
	probe := filepath.Join(root, "bin", "probe")
	for _, subject := range deploy.Subjects {
		name := subjectUser(plan, subject, owner)
		var ask []probeCell
		for _, p := range paths {
			ask = append(ask, probeCell{Op: "read", Path: p}, probeCell{Op: "write", Path: p})
		}
		for _, c := range runProbe(t, probe, name, ask) {
			if c.Got == "allowed" && !slices.Contains(meantFor(plan, c.Op, c.Path), subject) {
				t.Errorf("%s (%s) may %s %s, which is %v's", subject, name, c.Op, c.Path, meantFor(plan, c.Op, c.Path))
			}
		}
	}
	t.Logf("%d files made at run time, each reachable only by whom it is meant for", len(paths))
}

// meantFor is who may op a path the roles made, by where it is.
func meantFor(plan deploy.Plan, op, path string) []string {
	in := func(parts ...string) bool {
		dir := filepath.Join(parts...)
		return path == dir || strings.HasPrefix(path, dir+"/")
	}
	h, e := plan.Home, plan.Etc
	switch {
	case in(h, "sessions"):
		return []string{"loopd"}
	case in(h, "audit"):
		if op == "read" {
			return []string{"brokerd", "owner"}
		}
		return []string{"brokerd"}
	case in(h, "run", "tools-broker"):
		if op == "read" {
			return []string{"brokerd", "tools"}
		}
		return []string{"brokerd"}
	case in(e, "grants"), in(e, "jobs"):
		if op == "read" {
			return []string{"brokerd"}
		}
		return nil // the owner's, as root
	case in(h, "broker"), in(h, "memory", "notes"), in(h, "index"), in(e, "secrets"):
		return []string{"brokerd"}
	case in(h, "gateway"):
		return []string{"gatewayd"}
	}
	return nil
}
