package deploy

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Unit is one systemd service: one role, as its own user.
type Unit struct {
	Name        string   `json:"name"`
	Role        string   `json:"role"`
	Description string   `json:"description"`
	User        string   `json:"user"`
	Group       string   `json:"group"`
	Exec        []string `json:"exec"`
	// After and Wants are the units this one starts after (and pulls in).
	After []string `json:"after"`
	// Service is the [Service] section in order, hardening included; each
	// setting is justified in docs/decisions.md ("Unit hardening").
	Service []Setting `json:"service"`
}

// Setting is one key=value line of a unit.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// hardening every role's unit has. The tools unit (rootless Podman) cannot
// have all of it: see toolsUnit.
var hardening = []Setting{
	{"NoNewPrivileges", "yes"},
	{"ProtectSystem", "strict"},
	{"ProtectHome", "yes"},
	{"PrivateTmp", "yes"},
	{"PrivateDevices", "yes"},
	{"ProtectKernelTunables", "yes"},
	{"ProtectKernelModules", "yes"},
	{"ProtectKernelLogs", "yes"},
	{"ProtectControlGroups", "yes"},
	{"ProtectClock", "yes"},
	{"ProtectHostname", "yes"},
	{"PrivateMounts", "yes"},
	{"ProtectProc", "invisible"},
	{"RestrictNamespaces", "yes"},
	{"RestrictRealtime", "yes"},
	{"RestrictSUIDSGID", "yes"},
	{"LockPersonality", "yes"},
	{"MemoryDenyWriteExecute", "yes"},
	{"SystemCallArchitectures", "native"},
	{"SystemCallFilter", "@system-service"},
	{"SystemCallFilter", "~@privileged"},
	{"CapabilityBoundingSet", ""},
	{"AmbientCapabilities", ""},
	{"UMask", "0077"},
}

func (b *builder) units() {
	run := func(dir string) string { return b.home("run", dir) }
	roles := []struct {
		role, about string
		after       []string
		rw          []string
		net         []Setting
		extra       []Setting
	}{
		{"inferproxy", "forwards loopd's model requests to the model server", nil,
			[]string{run("loop-infer")},
			// The model server is on this machine (docs/running.md): nothing else.
			[]Setting{{"RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"}, {"IPAddressDeny", "any"}, {"IPAddressAllow", "localhost"}}, nil},
		{"tools", "rootless Podman for boxmaker's tool containers", nil, nil, nil, nil},
		{"brokerd", "boxmaker's tool broker", []string{"tools"},
			[]string{b.home("audit"), b.home("broker"), b.home("memory", "notes"), b.home("index"), run("loop-broker"), run("owner-broker"), run("tools-broker")},
			// http_fetch's egress proxy dials the granted hosts, which are
			// only known per call: no address list can be fixed here.
			[]Setting{{"RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"}}, nil},
		{"gatewayd", "boxmaker's Mattermost gateway", []string{"brokerd", "loopd"},
			[]string{b.home("gateway"), run("broker-gateway")},
			// The Mattermost server's address is the owner's to set
			// (IPAddressAllow= in a drop-in when it is fixed).
			[]Setting{{"RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"}},
			[]Setting{{"LoadCredential", "mattermost-token:" + b.etc("gatewayd.token")}}},
		{"loopd", "boxmaker's agent loop", []string{"inferproxy", "brokerd"},
			[]string{b.home("sessions"), run("owner-loop"), run("gateway-loop"), run("broker-loop")},
			// loopd talks to nothing but Unix sockets: no network at all.
			[]Setting{{"RestrictAddressFamilies", "AF_UNIX"}, {"PrivateNetwork", "yes"}, {"IPAddressDeny", "any"}}, nil},
	}
	for _, r := range roles {
		u := Unit{Name: b.unitName(r.role), Role: r.role, Description: r.about, User: b.name(r.role), Group: b.name(r.role), After: []string{}}
		for _, a := range r.after {
			u.After = append(u.After, b.unitName(a))
		}
		if r.role == "tools" {
			u.Exec, u.Service = b.toolsUnit()
		} else {
			u.Exec = []string{filepath.Join(b.p.Bin, r.role), "serve", "--config", b.etc(r.role + ".toml")}
			u.Service = append(u.Service, Setting{"Environment", "BOXMAKER_HOME=" + b.p.Home})
			h := hardening
			if r.role == "brokerd" {
				// brokerd checks and holds every grant's path before the
				// tools' Podman mounts it (the owner's folders are in
				// /home): it must see them, and never writes there.
				h = replaced(h, "ProtectHome", "read-only")
				// systemd makes RestrictSUIDSGID= refuse openat2 outright
				// (ENOSYS: seccomp cannot read the mode inside its struct),
				// and brokerd opens every mount source with openat2's
				// RESOLVE_NO_SYMLINKS: with it, no call could mount a folder
				// (measured in the booted tree).
				h = without(h, "RestrictSUIDSGID")
			}
			u.Service = append(u.Service, h...)
			u.Service = append(u.Service, Setting{"ReadWritePaths", strings.Join(r.rw, " ")})
			u.Service = append(u.Service, r.net...)
			u.Service = append(u.Service, r.extra...)
		}
		u.Service = append(u.Service, Setting{"Restart", "on-failure"}, Setting{"RestartSec", "2s"})
		b.plan.Units = append(b.plan.Units, u)
		b.file(filepath.Join(b.p.UnitDir, u.Name), "root", "root", "0644", ContentExact, u.Text(), false, "the systemd unit of "+r.role)
	}
	b.file(filepath.Join(b.p.TmpfilesDir, strings.TrimSuffix(b.p.Prefix, "-")+".conf"), "root", "root", "0644", ContentExact,
		b.tmpfiles(), false, "creates the home's directories at boot with their modes (never a shared RuntimeDirectory=)")
}

// toolsUnit is the rootless Podman service. It needs what the roles' units
// forbid: newuidmap and newgidmap are setuid (so no NoNewPrivileges, no
// capability bound), and it makes user, mount and network namespaces.
func (b *builder) toolsUnit() ([]string, []Setting) {
	sock := b.home("run", "broker-tools", "podman.sock")
	// --storage-driver: with no storage.conf, Debian 12's Podman 4.3 falls
	// back to vfs for a rootless user, which copies the image's root for
	// every container; the kernel's own rootless overlay works there
	// (measured in the booted tree).
	exec := []string{"/usr/bin/podman", "--storage-driver=overlay", "system", "service", "--time=0", "unix://" + sock}
	return exec, []Setting{
		{"Environment", "HOME=" + b.home("tools")},
		{"Environment", "XDG_RUNTIME_DIR=/run/" + b.name("tools")},
		{"Environment", "CONTAINERS_CONF=" + b.etc("tools-containers.conf")},
		{"RuntimeDirectory", b.name("tools")},
		{"RuntimeDirectoryMode", "0700"},
		{"WorkingDirectory", b.home("tools")},
		{"ProtectSystem", "full"},
		// Not ProtectHome=: this service bind-mounts the owner's granted
		// folders, in /home, into the containers, writable ones included
		// (a booted test showed no grant under /home could work).
		{"PrivateTmp", "yes"},
		// Not ProtectKernelModules=, ProtectKernelLogs=, ProtectClock=,
		// RestrictRealtime=, LockPersonality= or SystemCallArchitectures=:
		// with User=, each implies NoNewPrivileges=yes (systemd.exec), and
		// setuid newuidmap then cannot write uid_map, so no container
		// starts (measured in the booted tree; docs/decisions.md, "Unit
		// hardening").
		{"UMask", "0077"},
		// Podman makes its API socket 0600 whatever the umask, and has no
		// option for it: once it exists, it is made 0660 for brokerd's pair
		// group (the setgid directory's). The unit counts as started only
		// after this, so brokerd (After=) never finds it closed. The wait
		// ends when Podman has exited (systemd puts its pid in ${MAINPID}):
		// without that, a Podman that cannot start kept the unit, and
		// brokerd after it, waiting for TimeoutStartSec= (90 s), which a
		// booted systemd showed (docs/decisions.md, "Units checked under a
		// booted systemd"). /proc, not kill -0: Podman may still be root,
		// in systemd's setup before its exec, when this starts (kill -0 is
		// then refused), and this unit has no ProtectProc= to hide it.
		// A socket the last run left (Podman killed, not stopped) would
		// satisfy the wait below before Podman replaces it with a new
		// 0600 one: brokerd was then refused (a booted test, after deploy
		// remove and apply again). It goes first.
		{"ExecStartPre", "/bin/rm -f " + sock},
		{"ExecStartPost", fmt.Sprintf(`/bin/sh -c "until [ -S %s ]; do [ -e /proc/${MAINPID}/stat ] || exit 1; sleep 0.1; done; chmod 0660 %s"`, sock, sock)},
		{"Delegate", "yes"},
		// All tool calls together: on cgroup v1 rootless Podman cannot
		// limit one call, but the service's own cgroup holds (measured:
		// docs/decisions.md, "Where tool containers run").
		{"MemoryMax", "1G"},
		{"TasksMax", "512"},
		{"CPUQuota", "200%"},
		{"KillMode", "mixed"},
	}
}

// replaced is settings with key's value set to value, in a new slice.
func replaced(settings []Setting, key, value string) []Setting {
	out := make([]Setting, len(settings))
	for i, st := range settings {
		if st.Key == key {
			st.Value = value
		}
		out[i] = st
	}
	return out
}

// without is settings less key, in a new slice.
func without(settings []Setting, key string) []Setting {
	var out []Setting
	for _, st := range settings {
		if st.Key != key {
			out = append(out, st)
		}
	}
	return out
}

// Text is the unit file.
func (u Unit) Text() string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Generated by `boxmaker deploy apply` from the deployment plan; do not edit.\n")
	fmt.Fprintf(&s, "[Unit]\nDescription=%s\n", u.Description)
	if len(u.After) > 0 {
		fmt.Fprintf(&s, "After=%s\nWants=%s\n", strings.Join(u.After, " "), strings.Join(u.After, " "))
	}
	fmt.Fprintf(&s, "\n[Service]\nType=simple\nUser=%s\nGroup=%s\nExecStart=%s\n", u.User, u.Group, strings.Join(u.Exec, " "))
	for _, st := range u.Service {
		fmt.Fprintf(&s, "%s=%s\n", st.Key, st.Value)
	}
	fmt.Fprintf(&s, "\n[Install]\nWantedBy=multi-user.target\n")
	return s.String()
}

// tmpfiles is the tmpfiles.d file: one d line per directory of the home,
// so a reboot (or a deleted run/ directory) comes back with the plan's
// modes. /etc is left to apply: it is not volatile.
func (b *builder) tmpfiles() string {
	var s strings.Builder
	s.WriteString("# Generated by `boxmaker deploy apply` from the deployment plan; do not edit.\n")
	for _, p := range b.plan.Paths {
		if p.Kind == KindDir && (p.Path == b.p.Home || strings.HasPrefix(p.Path, b.p.Home+"/")) {
			fmt.Fprintf(&s, "d %s %s %s %s -\n", p.Path, p.Mode, p.Owner, p.Group)
		}
	}
	return s.String()
}
