package deploy

import (
	"path/filepath"
)

func (b *builder) dir(path, owner, group, mode string, state bool, why string) {
	b.plan.Paths = append(b.plan.Paths, Path{Path: path, Kind: KindDir, Owner: owner, Group: group, Mode: mode, State: state, Why: why})
}

func (b *builder) file(path, owner, group, mode, content, text string, state bool, why string) {
	b.plan.Paths = append(b.plan.Paths, Path{Path: path, Kind: KindFile, Owner: owner, Group: group, Mode: mode,
		Content: content, Text: text, State: state, Why: why})
}

// paths lists every directory and file, parents before children. Modes are
// the tightest that let the roles work: a role's state directory is its own
// (0700); a socket directory is the listener's with the pair group allowed
// only to search it (2710, setgid so that the socket made inside takes the
// pair group); configuration is root's, readable by the role's group.
func (b *builder) paths() {
	lo, br, gw, ip, tl := b.name("loopd"), b.name("brokerd"), b.name("gatewayd"), b.name("inferproxy"), b.name("tools")
	owner := b.name("owner")

	b.dir(b.p.Home, "root", "root", "0711", false, "BOXMAKER_HOME: every role may pass through, none may list or write it")
	b.dir(b.home("sessions"), lo, lo, "0700", true, "loopd's session logs")
	// memory/ is searchable by all (0751) so that brokerd reaches notes/
	// inside it; listing it and reading core.md stay root's and loopd's.
	b.dir(b.home("memory"), "root", lo, "0751", true, "the owner's core memory: written by the owner as root, read by loopd")
	b.file(b.home("memory", "core.md"), "root", lo, "0640", ContentOwner, "", false, "the owner's core memory, in every prompt")
	b.dir(b.home("memory", "notes"), br, br, "0700", true,
		"the model's notes, each with the label brokerd stamped (issue 17): brokerd's alone, so loopd never reads one unasked")
	b.dir(b.home("index"), br, br, "0700", true, "the notes' search index (pre-M1 §7): brokerd's, rebuilt from the notes")
	b.dir(b.home("audit"), br, owner, "2750", true,
		"the audit log: brokerd its only writer; the owner group reads it for bxctl audit verify")
	b.dir(b.home("broker"), br, br, "0700", true, "brokerd's session taint, audit head, floor and Podman instance")
	b.dir(b.home("gateway"), gw, gw, "0700", true, "gatewayd's threads, approval posts and cursors")
	b.dir(b.home("tools"), tl, tl, "0700", true, "the rootless Podman service's home: its images and containers")
	b.dir(b.home("run"), "root", "root", "0711", false, "the socket directories' parent: searchable, not listable")
	for _, pr := range pairs {
		b.dir(b.home("run", pr.dir), b.name(pr.listener), b.pairGroup(pr.dir, pr.client), "2710", true,
			"holds "+pr.socket+": "+pr.listener+" listens, "+pr.client+" may only search it to connect")
	}

	b.dir(b.home("run", "tools-broker"), br, tl, "2710", true,
		"brokerd's files the tools' Podman service reads ([podman] shared_dir): the seccomp profile, each call's egress socket")

	b.dir(b.p.Etc, "root", "root", "0755", false, "configuration, grants and secrets")
	b.dir(b.etc("grants"), "root", br, "0750", true, "one grant per file; written by the owner as root, read by brokerd only")
	b.dir(b.etc("secrets"), br, br, "0700", true, "one file per secret; brokerd's alone")
	b.dir(b.etc("jobs"), "root", br, "0750", true, "one scheduled job per file; written by the owner as root, read by brokerd only")
	for _, r := range []struct{ role, user string }{{"loopd", lo}, {"brokerd", br}, {"gatewayd", gw}, {"inferproxy", ip}} {
		b.file(b.etc(r.role+".toml"), "root", r.user, "0640", ContentSeed, b.config(r.role), r.role == "brokerd",
			r.role+"'s configuration: written once by deploy apply, then the owner's")
	}
	b.file(b.etc("tools-containers.conf"), "root", tl, "0640", ContentExact, toolsContainersConf, false,
		"the rootless Podman service's engine settings (CONTAINERS_CONF in its unit)")
	b.file(b.etc("gatewayd.token"), "root", "root", "0600", ContentOwner, "", true,
		"the Mattermost bot's token: the owner writes it; systemd hands it to gatewayd as a credential")

	for _, r := range []string{"loopd", "brokerd", "gatewayd", "inferproxy", "bxctl"} {
		b.plan.Paths = append(b.plan.Paths, Path{Path: filepath.Join(b.p.Bin, r), Kind: KindLink, Owner: "root", Group: "root",
			Target: "boxmaker", Why: "the role is chosen by the name it is run as"})
	}
}

// toolsContainersConf is the tools user's Podman engine: runc with the
// cgroupfs manager (crun fails on cgroup v1 hybrid hosts, and a system
// user has no systemd session for the systemd manager) and events in a
// file (no journald session either). docs/decisions.md, "The Podman
// runtime".
const toolsContainersConf = `[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`
