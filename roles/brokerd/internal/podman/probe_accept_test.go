package podman

import (
	"bytes"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
)

// wholeProbe is what the probe sees in a container that holds every
// limit of DefaultConfig: goodProbe's lines and limitProblems' own.
func wholeProbe() map[string]string {
	seen := goodProbe()
	maps.Copy(seen, map[string]string{"memory": strconv.Itoa(DefaultMemoryBytes), "pids": "64", "nofile": "256/256", "uid": "65534",
		"capeff": "0000000000000000", "nonewprivs": "1", "interfaces": "lo", "rootfs": "ro"})
	return seen
}

// TestAcceptUnenforced: each limit the probe does not see enforced refuses
// brokerd's start unless accept_unenforced names it; named, it is one
// warning line naming the limit and the runbook entry. What is not a
// limit (root, capabilities, network, seccomp) refuses whatever is
// accepted, and an accepted limit that holds says nothing.
func TestAcceptUnenforced(t *testing.T) {
	unenforced := map[string]string{"memory": "9223372036854771712", "pids": "max", "cpu": "-1/100000",
		"nofile": "1048576/1048576", "fsize": "unlimited/unlimited"}
	for _, tc := range []struct {
		name    string
		broken  []string // what the probe sees unenforced
		accept  []string
		refused string // "" when brokerd starts
		warned  []string
	}{
		{"all hold, nothing accepted", nil, nil, "", nil},
		{"all hold, all accepted", nil, AcceptableLimits, "", nil},
		{"memory, not accepted", []string{"memory"}, nil, "memory is", nil},
		{"memory, another accepted", []string{"memory"}, []string{"pids"}, "memory is", nil},
		{"memory, accepted", []string{"memory"}, []string{"memory"}, "", []string{"memory"}},
		{"pids, accepted", []string{"pids"}, []string{"pids"}, "", []string{"pids"}},
		{"cpu, accepted", []string{"cpu"}, []string{"cpu"}, "", []string{"cpu"}},
		{"nofile, accepted", []string{"nofile"}, []string{"nofile"}, "", []string{"nofile"}},
		{"fsize, accepted", []string{"fsize"}, []string{"fsize"}, "", []string{"fsize"}},
		{"rootless on cgroup v1, accepted", []string{"memory", "pids", "cpu"}, []string{"memory", "pids", "cpu"}, "", []string{"memory", "pids", "cpu"}},
		{"rootless on cgroup v1, cpu not accepted", []string{"memory", "pids", "cpu"}, []string{"memory", "pids"}, "cpu is", []string{"memory", "pids"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AcceptUnenforced = tc.accept
			var log bytes.Buffer
			r := &Runtime{cfg: cfg, log: &log}
			seen := wholeProbe()
			for _, l := range tc.broken {
				seen[l] = unenforced[l]
			}
			err := r.judge(seen)
			if tc.refused == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.refused != "" && (!errors.Is(err, ErrLimits) || !strings.Contains(err.Error(), tc.refused) ||
				!strings.HasSuffix(err.Error(), "see docs/runbook.md#tool-limits-not-enforced")) {
				t.Fatalf("got %v, want a refusal naming %q", err, tc.refused)
			}
			lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
			if log.Len() == 0 {
				lines = nil
			}
			if len(lines) != len(tc.warned) {
				t.Fatalf("warnings %q, want one for each of %v", lines, tc.warned)
			}
			if d := r.Describe(); len(tc.warned) > 0 && !strings.HasSuffix(d, ", but for "+strings.Join(tc.warned, ", ")+": not enforced here, and accepted by accept_unenforced") ||
				len(tc.warned) == 0 && strings.Contains(d, "but for") {
				t.Errorf("Describe says %q, accepted unenforced %v", d, tc.warned)
			}
			for i, l := range tc.warned {
				if !strings.HasPrefix(lines[i], "podman: warning: the "+l+" limit is not enforced (") ||
					!strings.HasSuffix(lines[i], "accept_unenforced names it; see docs/runbook.md#tool-limits-accepted") {
					t.Errorf("warning %q, want one naming %s", lines[i], l)
				}
			}
		})
	}
	// Never accepted, whatever the config says: these are not limits a
	// kernel may lack but the container's isolation.
	for k, v := range map[string]string{"uid": "0", "capeff": "00000000a80425fb", "nonewprivs": "0", "interfaces": "lo,eth0",
		"rootfs": "rw", "mount:/tmp": "none", "seccomp": "0", "setns": "ok"} {
		cfg := DefaultConfig()
		cfg.AcceptUnenforced = AcceptableLimits
		seen := wholeProbe()
		seen[k] = v
		if err := (&Runtime{cfg: cfg, log: &bytes.Buffer{}}).judge(seen); err == nil || !strings.Contains(err.Error(), k+" is ") {
			t.Errorf("%s=%s with every limit accepted: %v, want a refusal", k, v, err)
		}
	}
}
