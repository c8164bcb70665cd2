package podman

import (
	"strconv"

	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"
)

// cpuPeriod is the CFS period, in microseconds, of the CPU quota: the
// kernel's default. The quota is CPUMillicores/1000 of it per period.
const cpuPeriod = 100_000

// runTmpfsBytes is the size of the tmpfs on /run, which holds only the
// egress proxy's socket: no room for a command's data.
const runTmpfsBytes = 1 << 20

// scratch is a tmpfs brokerd gives every tool container.
type scratch struct {
	path string
	mode string
}

// scratches are the container's writable places besides its grants.
// Podman 4.3 ignores the spec's read_write_tmpfs (it does not know the
// field), so brokerd mounts each tmpfs itself: sized, nosuid and nodev,
// and the probe checks them in the container's mountinfo.
var scratches = []scratch{{"/tmp", "1777"}, {"/var/tmp", "1777"}, {"/run", "755"}}

// contain adds what keeps a tool container from reaching past its grants
// and limits, beyond specFor's isolation: the seccomp profile that refuses
// namespaces, the CPU quota, the file size limit, and the sized tmpfs
// mounts (docs/decisions.md, "No namespaces inside a tool container",
// "What limits a tool's writes").
func contain(s *specgen.SpecGenerator, cfg Config, seccompProfile string) {
	s.SeccompProfilePath = seccompProfile
	quota, period := cfg.CPUMillicores*cpuPeriod/1000, uint64(cpuPeriod)
	if s.ResourceLimits == nil {
		s.ResourceLimits = &spec.LinuxResources{}
	}
	s.ResourceLimits.CPU = &spec.LinuxCPU{Quota: &quota, Period: &period}
	fsize := uint64(cfg.FileBytes)
	s.Rlimits = append(s.Rlimits, spec.POSIXRlimit{Type: "fsize", Hard: fsize, Soft: fsize})
	// The tmpfs mounts replace read_write_tmpfs; false says so to a
	// service that knows the field, which would otherwise add its own.
	f := false
	s.ReadWriteTmpfs = &f
	for _, d := range scratches {
		size := cfg.TmpfsBytes
		if d.path == "/run" {
			size = runTmpfsBytes
		}
		s.Mounts = append(s.Mounts, spec.Mount{Destination: d.path, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"rw", "nosuid", "nodev", "size=" + strconv.FormatInt(size, 10), "mode=" + d.mode}})
	}
}
