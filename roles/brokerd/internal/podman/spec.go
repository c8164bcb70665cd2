package podman

import (
	"github.com/containers/podman/v5/pkg/namespaces"
	"github.com/containers/podman/v5/pkg/specgen"
	"github.com/containers/podman/v5/pkg/util"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"boxmaker/roles/brokerd/internal/runner"
)

// Labels on every container brokerd creates. CleanupLeftovers finds
// leftovers by labelScope: one brokerd's containers, however they ended.
const (
	labelScope = "boxmaker.scope"
	labelCall  = "boxmaker.call"
	labelTool  = "boxmaker.tool"
)

// Paths inside the container.
const (
	toolkitPath = "/bin/toolkit"
	// egressPath is where the egress proxy's socket appears, under the
	// tmpfs on /run.
	egressPath = "/run/boxmaker/egress.sock"
)

// nproc is RLIMIT_NPROC. The kernel counts it per uid across the whole
// host, every container of that uid and the owner's own processes
// included, so it cannot be one container's limit: the pids cgroup is
// (Config.Pids). It must still be set, since Podman on these hosts cannot
// inherit the host's, so it is set high enough never to bite first.
const nproc = 16384

// container is what one run's container needs beyond the RunSpec.
type container struct {
	name   string
	scope  string
	call   string // "<session>/<call>", or "" when brokerd did not say
	tool   string
	mounts []runner.Mount
	egress string // the proxy's socket on the host; "" for no egress
	// ca is the proxy's per-call CA certificate on the host, for a grant
	// with a secret; secretFile asks for the secret's own tmpfs
	// (secret.go).
	ca         string
	secretFile bool
	// seccomp is the profile's path on the host (seccomp.go).
	seccomp string
}

// specFor is the whole container, from a RunSpec's mounts and egress and
// the [podman] limits: the mounts at their own paths and nothing else of
// the host, no network at all (an http_fetch gets only the egress
// socket), a read-only root, every capability dropped, no new privileges,
// an unprivileged user, limits on memory, tasks, open files and wall time,
// and no log kept of what the tool printed.
func specFor(cfg Config, c container) *specgen.SpecGenerator {
	t, f := true, false
	s := specgen.NewSpecGenerator(cfg.Image, false)
	s.Name = c.name
	s.Labels = map[string]string{labelScope: c.scope, labelTool: c.tool}
	if c.call != "" {
		s.Labels[labelCall] = c.call
	}
	// The toolkit reads its request on stdin and answers on stdout;
	// nothing is passed in argv or the environment.
	s.Entrypoint = []string{toolkitPath}
	s.Command = []string{}
	s.Stdin = &t
	s.Terminal = &f
	s.Env = map[string]string{"PATH": "/bin"}
	s.EnvHost = &f
	s.HTTPProxy = &f
	s.WorkDir = "/"
	s.Hostname = "toolkit"
	// No autoremove: brokerd removes the container after every call, once
	// it has looked at how a failed one ended; CleanupLeftovers removes
	// what a crashed brokerd left.
	// "none": the output may be a secret file's content, and must not be
	// copied into Podman's container logs.
	s.LogConfiguration = &specgen.LogConfig{Driver: "none"}

	s.NetNS = specgen.Namespace{NSMode: specgen.NoNetwork}
	s.UseImageHosts = &t
	s.UseImageResolvConf = &t
	switch cfg.UserNS {
	case "":
	case "auto":
		// 65536 ids, 0 to 65535 inside, each mapped to a host id of
		// this container's alone (a [podman] user above them fails at
		// create).
		// The namespace mode alone is not enough: the service reads the
		// request from IDMappings (Podman's CLI fills both the same way).
		s.UserNS = specgen.Namespace{NSMode: specgen.Auto, Value: "size=65536"}
		m, err := util.ParseIDMapping(namespaces.UsernsMode("auto:size=65536"), nil, nil, "", "")
		if err != nil {
			panic(err) // a constant that parses
		}
		s.IDMappings = m
	default:
		s.UserNS = specgen.Namespace{NSMode: specgen.NamespaceMode(cfg.UserNS)}
	}
	s.User = cfg.User
	s.CapDrop = []string{"ALL"}
	s.NoNewPrivileges = &t
	s.Privileged = &f
	s.ReadOnlyFilesystem = &t

	// "bind", not "rbind": the grant's folder and nothing mounted below it
	// on the host.
	for _, m := range c.mounts {
		mode := "ro"
		if m.Writable {
			mode = "rw"
		}
		s.Mounts = append(s.Mounts, spec.Mount{Destination: m.Path, Type: "bind", Source: m.Path,
			Options: []string{"bind", mode, "nosuid", "nodev"}})
	}
	if c.egress != "" {
		s.Mounts = append(s.Mounts, spec.Mount{Destination: egressPath, Type: "bind", Source: c.egress,
			Options: []string{"bind", "rw", "nosuid", "nodev", "noexec"}})
	}
	s.Mounts = append(s.Mounts, secretMounts(c)...)

	mem, pids := cfg.MemoryBytes, cfg.Pids
	s.ResourceLimits = &spec.LinuxResources{
		Memory: &spec.LinuxMemory{Limit: &mem, Swap: &mem},
		Pids:   &spec.LinuxPids{Limit: pids},
	}
	nofile := uint64(cfg.NoFile)
	s.Rlimits = []spec.POSIXRlimit{
		{Type: "nofile", Hard: nofile, Soft: nofile},
		{Type: "nproc", Hard: nproc, Soft: nproc},
	}
	// Podman's own kill after the wall time, in whole seconds: a backstop
	// for a brokerd that died mid-call. brokerd stops it at TimeoutMS.
	s.Timeout = uint((cfg.TimeoutMS+999)/1000 + 1)
	// tmpfs on /tmp, /var/tmp and /run, seccomp, CPU and file size.
	contain(s, cfg, c.seccomp)
	return s
}
