package bxctl

import (
	"os"
	"path/filepath"

	"boxmaker/policy"
)

// The offline `grants check --grants DIR` has no brokerd to ask which paths
// no grant may reach (policy's loading rule 9), so it builds the set from
// what it can know: BOXMAKER_HOME (--home, else the environment, else the
// default) and its parts as docs/layout.md lays them out, the usual
// configuration directory, Podman's usual socket directory and storage,
// and whatever --protect adds (brokerd's config file or sockets kept
// elsewhere). brokerd's own set comes from its config; asking it (without
// --grants) is the authoritative check.

// homeParts are the directories under BOXMAKER_HOME the roles use
// (docs/layout.md; brokerd's config lists the same, and a test of each
// compares its list with that page). Home is protected whole; a part is
// listed too because it may be a symlink to another disk.
var homeParts = []string{
	"audit", "broker", "broker/sessions", "sessions", "memory", "memory/notes", "index", "gateway", "run",
	"run/loop-broker", "run/owner-broker", "run/loop-infer", "run/broker-gateway", "run/owner-loop", "run/gateway-loop",
	"run/broker-tools", "run/broker-loop", "run/tools-broker", "tools",
}

// usualProtected are boxmaker's and Podman's places outside the home in
// the documented layout (docs/layout.md, docs/running.md).
var usualProtected = []policy.ProtectedPath{
	{Path: "/etc/boxmaker", What: "boxmaker's configuration directory"},
	{Path: "/etc/boxmaker/secrets", What: "the secrets directory"},
	{Path: "/etc/boxmaker/jobs", What: "the jobs directory"},
	{Path: "/run/podman", What: "the Podman service's socket directory"},
	{Path: "/var/lib/containers/storage", What: "Podman's storage"},
	{Path: "/run/containers/storage", What: "Podman's storage"},
	{Path: "/etc/containers", What: "Podman's configuration"},
	{Path: "/usr/share/containers", What: "Podman's configuration"},
}

// offlineProtected is the set for home and the --protect paths. Relative
// paths are taken from the working directory, as the owner typed them.
func offlineProtected(home string, extra []string) (*policy.Protected, error) {
	abs := func(p string) (string, error) { return filepath.Abs(p) }
	h, err := abs(home)
	if err != nil {
		return nil, err
	}
	ps := []policy.ProtectedPath{{Path: h, What: "BOXMAKER_HOME"}}
	for _, rel := range homeParts {
		ps = append(ps, policy.ProtectedPath{Path: filepath.Join(h, rel), What: "BOXMAKER_HOME's " + rel})
	}
	ps = append(ps, usualProtected...)
	// The executable running now, which is brokerd's too in the usual
	// layout, and the folder of its role links.
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		ps = append(ps, policy.ProtectedPath{Path: exe, What: "boxmaker's executable"},
			policy.ProtectedPath{Path: filepath.Dir(exe), What: "the folder of boxmaker's executable"})
	}
	for _, p := range extra {
		a, err := abs(p)
		if err != nil {
			return nil, err
		}
		ps = append(ps, policy.ProtectedPath{Path: a, What: "a path given with --protect"})
	}
	return policy.NewProtected(ps)
}
