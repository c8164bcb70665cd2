package podman

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrNamespaces is what CheckLimits's error wraps when a probe container
// could make or enter a namespace: brokerd refuses to start.
var ErrNamespaces = errors.New("podman: a tool container can create or enter namespaces")

// nsProblems says which way of making or entering a namespace the probe
// found open (toolkit's probeContainment). The user namespace attempts
// must be refused with seccomp's EPERM: Go reports a failure of the child
// after the clone (an exec of a missing /bin/true, say) as an errno too,
// and such a failure says nothing of whether the namespace was made.
// setns must be refused by seccomp (EPERM): past seccomp the kernel's
// EINVAL for the probe's own namespace says nothing about another one.
// clone3 must be hidden (ENOSYS), so that libc falls back to clone.
func nsProblems(seen map[string]string) []string {
	var problems []string
	bad := func(what, want string) {
		problems = append(problems, fmt.Sprintf("%s is %q inside the container, want %s", what, seen[what], want))
	}
	if seen["seccomp"] != "2" {
		bad("seccomp", "2 (a seccomp filter)")
	}
	for _, k := range []string{"userns_clone", "userns_unshare"} {
		if seen[k] != "refused EPERM" {
			bad(k, `"refused EPERM"`)
		}
	}
	if seen["setns"] != "refused EPERM" {
		bad("setns", `"refused EPERM"`)
	}
	if seen["clone3"] != "refused ENOSYS" {
		bad("clone3", `"refused ENOSYS"`)
	}
	return problems
}

var tmpfsSize = regexp.MustCompile(`(?:^|,)size=([0-9]+)k(?:,|$)`)

// containProblems compares the probe's CPU, file size and tmpfs lines with
// the configuration. A tmpfs must be a tmpfs, nosuid and nodev, with a
// size no larger than configured (the kernel rounds it up to whole pages).
func (r *Runtime) containProblems(seen map[string]string) []string {
	var problems []string
	bad := func(what, want string) {
		problems = append(problems, fmt.Sprintf("%s is %q inside the container, want %s", what, seen[what], want))
	}
	if want := fmt.Sprintf("%d/%d", r.cfg.CPUMillicores*cpuPeriod/1000, cpuPeriod); seen["cpu"] != want {
		bad("cpu", want+" (quota/period, µs)")
	}
	if want := fmt.Sprintf("%d/%d", r.cfg.FileBytes, r.cfg.FileBytes); seen["fsize"] != want {
		bad("fsize", want)
	}
	for _, d := range scratches {
		size := r.cfg.TmpfsBytes
		if d.path == "/run" {
			size = runTmpfsBytes
		}
		want := fmt.Sprintf("a tmpfs, nosuid, nodev, of at most %d bytes", size)
		f := strings.Fields(seen["mount:"+d.path])
		if len(f) != 3 || f[0] != "tmpfs" {
			bad("mount:"+d.path, want)
			continue
		}
		opts := strings.Split(f[1], ",")
		m := tmpfsSize.FindStringSubmatch(f[2])
		if m == nil || !slices.Contains(opts, "nosuid") || !slices.Contains(opts, "nodev") {
			bad("mount:"+d.path, want)
			continue
		}
		if k, err := strconv.ParseInt(m[1], 10, 64); err != nil || k <= 0 || k*1024 > (size+4095)/4096*4096 {
			bad("mount:"+d.path, want)
		}
	}
	return problems
}
