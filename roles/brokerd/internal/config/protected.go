package config

import (
	"path/filepath"
	"strings"

	"boxmaker/policy"
)

// ConfigDir is boxmaker's configuration directory (pre-M1 spec §7): every
// role's config file, the grants and the secrets, in the usual layout.
const ConfigDir = "/etc/boxmaker"

// HomeParts are the directories under BOXMAKER_HOME that the roles use
// (docs/layout.md), with what each is. Home itself is protected whole; its
// parts are listed as well because any of them may be a symlink to
// another disk, and what it leads to must be protected too.
var HomeParts = []struct{ Rel, What string }{
	{"audit", "the audit log"},
	{"broker", "brokerd's state"},
	{"broker/sessions", "brokerd's session taint files"},
	{"sessions", "loopd's session logs"},
	{"memory", "the owner's core memory"},
	{"memory/notes", "the notes brokerd labels"},
	{"index", "the notes' index"},
	{"gateway", "gatewayd's state (threads, approval posts)"},
	{"run", "the socket directories"},
	{"run/loop-broker", "broker.sock's directory"},
	{"run/owner-broker", "admin.sock's directory"},
	{"run/loop-infer", "infer.sock's directory"},
	{"run/broker-gateway", "gateway.sock's directory"},
	{"run/owner-loop", "loop.sock's directory (bxctl)"},
	{"run/gateway-loop", "loop.sock's directory (gatewayd)"},
	{"run/broker-tools", "the tools' Podman socket's directory"},
	{"run/broker-loop", "loop.sock's directory (brokerd's jobs)"},
	{"run/tools-broker", "brokerd's files for the tools' Podman service"},
	{"tools", "the tools' Podman storage"},
}

// roleConfigs are the other roles' config files, by their usual names,
// looked for beside brokerd's own.
var roleConfigs = []struct{ Name, What string }{
	{"loopd.toml", "loopd's config file"},
	{"inferproxy.toml", "inferproxy's config file"},
	{"gatewayd.toml", "gatewayd's config file"},
	{"config.toml", "boxmaker's shared config file"},
}

// podmanStorage is where a root Podman service keeps its images,
// containers and their state by default (containers-storage.conf(5)).
var podmanStorage = []string{"/var/lib/containers/storage", "/run/containers/storage"}

// Protected lists the paths no grant may reach (policy's loading rule 9,
// issue 12): BOXMAKER_HOME and each of its parts, the grants and secrets
// directories, every socket's directory wherever it is, this config
// file and the other roles' beside it, the configuration directory, and
// the Podman service's socket directory and default storage. A grant that
// reached any of them could write a grant, lower a session's taint, read
// the audit log or loopd's sessions, or drive Podman itself.
func (c Config) Protected() []policy.ProtectedPath {
	home := c.Paths.Home
	ps := []policy.ProtectedPath{{Path: home, What: "BOXMAKER_HOME"}}
	for _, p := range HomeParts {
		ps = append(ps, policy.ProtectedPath{Path: filepath.Join(home, p.Rel), What: p.What})
	}
	ps = append(ps,
		policy.ProtectedPath{Path: c.Paths.Grants, What: "the grants directory"},
		policy.ProtectedPath{Path: c.Paths.Secrets, What: "the secrets directory"},
		policy.ProtectedPath{Path: c.Paths.Jobs, What: "the jobs directory"},
		policy.ProtectedPath{Path: filepath.Dir(c.Sockets.Broker), What: "broker.sock's directory"},
		policy.ProtectedPath{Path: filepath.Dir(c.Sockets.Admin), What: "admin.sock's directory"},
		policy.ProtectedPath{Path: ConfigDir, What: "boxmaker's configuration directory"},
	)
	if c.Sockets.Gateway != "" {
		// A tool that could listen there would be the gatewayd brokerd
		// believes, and could see every approval and answer it.
		ps = append(ps, policy.ProtectedPath{Path: filepath.Dir(c.Sockets.Gateway), What: "gateway.sock's directory"})
	}
	if c.Sockets.Loop != "" {
		// A tool that could listen there would be the loopd brokerd
		// starts jobs on, and would read every job's prompt.
		ps = append(ps, policy.ProtectedPath{Path: filepath.Dir(c.Sockets.Loop), What: "loopd's jobs socket's directory"})
	}
	if c.File != "" {
		ps = append(ps, policy.ProtectedPath{Path: c.File, What: "brokerd's config file"})
		for _, rc := range roleConfigs {
			ps = append(ps, policy.ProtectedPath{Path: filepath.Join(filepath.Dir(c.File), rc.Name), What: rc.What})
		}
	}
	if sock, ok := strings.CutPrefix(c.Podman.Socket, "unix://"); ok && filepath.IsAbs(sock) {
		ps = append(ps, policy.ProtectedPath{Path: filepath.Dir(sock), What: "the Podman service's socket directory"})
	}
	if c.Podman.SharedDir != "" {
		// The seccomp profile the service applies, and the calls' egress
		// sockets: a tool that could write there could loosen the next
		// container's filter.
		ps = append(ps, policy.ProtectedPath{Path: c.Podman.SharedDir, What: "the directory brokerd shares with the Podman service"})
	}
	for _, p := range podmanStorage {
		ps = append(ps, policy.ProtectedPath{Path: p, What: "Podman's storage"})
	}
	return ps
}
