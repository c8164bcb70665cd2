package podman

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"boxmaker/runbook"
)

// ErrLimits is what CheckLimits's errors wrap.
var ErrLimits = errors.New("podman: a tool container does not hold the configured limits")

// CheckLimits runs the toolkit's probe in a container made like every
// tool's, and compares what it sees from inside with the configuration:
// brokerd does not believe a limit it cannot see enforced (rootless Podman
// on cgroup v1 ignores memory and process limits with only a warning).
func (r *Runtime) CheckLimits(ctx context.Context) error {
	ans, err := r.run(ctx, r.containerFor("probe"), probeRequest(), "")
	if err != nil {
		return err
	}
	if ans.Status != "result" {
		return fmt.Errorf("%w: the probe failed: %s; %s", ErrLimits, ans.Text, runbook.See("tool-limits-not-enforced"))
	}
	return r.judge(parseProbe(ans.Text))
}

// judge says whether what the probe saw lets brokerd start: a namespace
// way open or an unenforced limit refuses, unless brokerd.toml accepts
// that limit, which is then a warning line on the log.
func (r *Runtime) judge(seen map[string]string) error {
	if problems := nsProblems(seen); len(problems) > 0 {
		return fmt.Errorf("%w: %s; %s", ErrNamespaces, strings.Join(problems, "; "), runbook.See("tool-namespaces-allowed"))
	}
	var refused []string
	for _, p := range append(r.limitProblems(seen), r.containProblems(seen)...) {
		// Every problem starts with the probe's name for what it saw
		// (limitProblems, containProblems): "memory is ...".
		if what, _, _ := strings.Cut(p, " "); slices.Contains(r.cfg.AcceptUnenforced, what) {
			// Accepted in brokerd.toml: said at every start, never silent.
			fmt.Fprintf(r.log, "podman: warning: the %s limit is not enforced (%s); brokerd starts because [podman] accept_unenforced names it; %s\n",
				what, p, runbook.See("tool-limits-accepted"))
			r.unenforced = append(r.unenforced, what)
			continue
		}
		refused = append(refused, p)
	}
	if len(refused) > 0 {
		return fmt.Errorf("%w: %s; %s", ErrLimits, strings.Join(refused, "; "), runbook.See("tool-limits-not-enforced"))
	}
	return nil
}

func parseProbe(text string) map[string]string {
	seen := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			seen[k] = v
		}
	}
	return seen
}

// limitProblems compares the probe's lines with the configuration. The
// kernel rounds a memory limit down to whole pages, so any limit at or
// under the configured one holds.
func (r *Runtime) limitProblems(seen map[string]string) []string {
	var problems []string
	bad := func(what, want string) {
		problems = append(problems, fmt.Sprintf("%s is %q inside the container, want %s", what, seen[what], want))
	}
	if mem, err := strconv.ParseInt(seen["memory"], 10, 64); err != nil || mem <= 0 || mem > r.cfg.MemoryBytes {
		bad("memory", fmt.Sprintf("at most %d", r.cfg.MemoryBytes))
	}
	if seen["pids"] != strconv.FormatInt(r.cfg.Pids, 10) {
		bad("pids", strconv.FormatInt(r.cfg.Pids, 10))
	}
	if want := fmt.Sprintf("%d/%d", r.cfg.NoFile, r.cfg.NoFile); seen["nofile"] != want {
		bad("nofile", want)
	}
	if seen["uid"] == "0" || seen["uid"] == "" {
		bad("uid", "not 0")
	}
	if seen["capeff"] != "0000000000000000" {
		bad("capeff", "no capabilities")
	}
	if seen["nonewprivs"] != "1" {
		bad("nonewprivs", "1")
	}
	if seen["interfaces"] != "lo" {
		bad("interfaces", "lo alone (no network)")
	}
	if seen["rootfs"] != "ro" {
		bad("rootfs", "ro")
	}
	return problems
}

// Describe is what this runtime checked before brokerd served, for bxctl
// doctor: the image every call runs, and that the probe container saw its
// namespaces closed, seccomp in force and the limits held, but for those
// it saw unenforced that brokerd.toml accepts.
func (r *Runtime) Describe() string {
	s := fmt.Sprintf("image %s; at start a probe container saw its namespaces closed, the seccomp profile in force and the limits held", short(strings.TrimPrefix(r.cfg.Image, "sha256:")))
	if len(r.unenforced) > 0 {
		s += fmt.Sprintf(", but for %s: not enforced here, and accepted by accept_unenforced", strings.Join(r.unenforced, ", "))
	}
	return s
}
