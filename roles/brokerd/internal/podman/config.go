package podman

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"boxmaker/roles/brokerd/internal/image"
)

// Config is brokerd.toml's [podman] section. Zero values take the defaults
// below (Check fills them in), so a brokerd.toml needs only the image:
//
//	[podman]
//	socket = "unix:///run/podman/podman.sock"
//	image = "auto"                  # or "sha256:…", printed by brokerd image build
//	timeout_ms = 30000
//	memory_bytes = 268435456
//	pids = 64
//	nofile = 256
//	output_bytes = 65536
//	cpu_millicores = 1000
//	file_bytes = 67108864
//	tmpfs_bytes = 67108864
//	user = "65534:65534"
//	userns = ""                     # or "keep-id", "auto"
//	shared_dir = ""                 # for a service run by another user
//	accept_unenforced = []          # e.g. ["memory", "pids", "cpu"]
type Config struct {
	// Socket is the Podman service's API socket, as a unix:// URL.
	Socket string `toml:"socket"`
	// Image is the tool image's full id, "sha256:" and 64 hex digits, or
	// "auto": the tool image whose layer is the one brokerd image build
	// makes from ImageInputs (image.LayerDigest), found at startup.
	// brokerd runs no other image, and refuses to start if it is missing.
	Image string `toml:"image"`
	// ImageInputs are the files image = "auto" expects the image made of;
	// empty fields are this executable, /bin/busybox and the host's CA
	// bundle, as brokerd image build takes them. Not in the file: tests
	// set it.
	ImageInputs image.Inputs `toml:"-"`
	// TimeoutMS is each call's wall time, from creating its container to
	// its answer. Past it the container is killed and the call fails.
	TimeoutMS int64 `toml:"timeout_ms"`
	// MemoryBytes limits the container's memory, swap included.
	MemoryBytes int64 `toml:"memory_bytes"`
	// Pids limits the tasks (processes and threads) in the container.
	Pids int64 `toml:"pids"`
	// NoFile is RLIMIT_NOFILE, soft and hard, for the container's
	// processes. Podman on these hosts also needs it set explicitly.
	NoFile int64 `toml:"nofile"`
	// OutputBytes caps a result's content; a longer one is cut and marked
	// truncated.
	OutputBytes int64 `toml:"output_bytes"`
	// CPUMillicores is the container's CPU quota, in thousandths of a
	// CPU: 1000 is one whole CPU, whatever the threads do.
	CPUMillicores int64 `toml:"cpu_millicores"`
	// FileBytes is RLIMIT_FSIZE: no process of the tool can make a file
	// longer than this, in a writable grant or on a tmpfs. It bounds each
	// file, not their sum (docs/decisions.md, "What limits a tool's
	// writes").
	FileBytes int64 `toml:"file_bytes"`
	// TmpfsBytes is the size of each of the tmpfs on /tmp and /var/tmp
	// (and the cap on /run's); their pages also count against
	// MemoryBytes, so the smaller of the two is what holds.
	TmpfsBytes int64 `toml:"tmpfs_bytes"`
	// User is the numeric "uid:gid" the tools run as inside the container;
	// never 0. A writable mount must be writable by it: set it to the
	// owner's uid:gid so that write_file and shell write as the owner
	// (docs/decisions.md, "Who the tools run as").
	User string `toml:"user"`
	// UserNS is "" (the service's own user namespace), "keep-id", for a
	// rootless service: the service user's uid outside is the same uid
	// inside, or "auto", for a rootful service: each container gets a user
	// namespace of its own, on a range of host ids Podman picks that no
	// other container uses (docs/decisions.md, "Where tool containers
	// run").
	UserNS string `toml:"userns"`
	// SharedDir is where brokerd puts what a Podman service running as
	// another user must reach: the seccomp profile it reads at every
	// create, and each http_fetch's egress socket directory, which it
	// bind-mounts. brokerd must own it; its group is the service user's
	// alone, and its mode 02710 (setgid: what brokerd makes inside takes
	// that group). "" keeps them in brokerd's own state directory and the
	// system's temporary directory, which only a root service can reach.
	SharedDir string `toml:"shared_dir"`
	// AcceptUnenforced names limits that brokerd starts without when the
	// startup probe does not see them enforced: each one seen unenforced
	// is a warning line at every start instead of a refusal. Only the
	// names in AcceptableLimits; the default accepts none.
	AcceptUnenforced []string `toml:"accept_unenforced"`
}

// AcceptableLimits are the limits accept_unenforced may name: those the
// probe checks that a kernel may fail to enforce. The rest of what the
// probe checks (no root, no capabilities, no network, a read-only root,
// seccomp, the tmpfs mounts) is never accepted.
var AcceptableLimits = []string{"memory", "pids", "cpu", "nofile", "fsize"}

// Defaults.
const (
	DefaultSocket      = "unix:///run/podman/podman.sock"
	DefaultTimeoutMS   = 30_000
	DefaultMemoryBytes = 256 << 20
	DefaultPids        = 64
	DefaultNoFile      = 256
	DefaultOutputBytes = 64 << 10
	DefaultCPU         = 1000
	DefaultFileBytes   = 64 << 20
	DefaultTmpfsBytes  = 64 << 20
	DefaultUser        = "65534:65534"
)

// Bounds that keep a mistyped value from meaning "no limit" in practice.
const (
	maxTimeoutMS   = 3_600_000
	minMemoryBytes = 16 << 20 // the toolkit itself needs a few MiB
	minPids        = 16       // the Go runtime in the toolkit needs a few threads
	minNoFile      = 16
	maxOutputBytes = 512 << 10 // the answer must fit a 1 MiB frame, escaped
	minCPU         = 10        // 1% of a CPU: the toolkit must still start within the timeout
	maxCPU         = 64_000
	minFileBytes   = 1 << 20 // write_file's content alone can be most of a frame
	minTmpfsBytes  = 1 << 20
)

var (
	imageID = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	userID  = regexp.MustCompile(`^[0-9]+:[0-9]+$`)
)

// DefaultConfig is the [podman] section when brokerd.toml leaves every key
// out, except the image, which has no default.
func DefaultConfig() Config {
	c := Config{}
	c.fill()
	return c
}

// SetDefaults fills in the defaults; brokerd's config loader calls it
// before decoding, so keys left out keep them.
func (c *Config) SetDefaults() { c.fill() }

func (c *Config) fill() {
	if c.Socket == "" {
		c.Socket = DefaultSocket
	}
	for _, f := range []struct {
		v   *int64
		def int64
	}{{&c.TimeoutMS, DefaultTimeoutMS}, {&c.MemoryBytes, DefaultMemoryBytes}, {&c.Pids, DefaultPids},
		{&c.NoFile, DefaultNoFile}, {&c.OutputBytes, DefaultOutputBytes}, {&c.CPUMillicores, DefaultCPU},
		{&c.FileBytes, DefaultFileBytes}, {&c.TmpfsBytes, DefaultTmpfsBytes}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.User == "" {
		c.User = DefaultUser
	}
}

// Check fills in the defaults and says what is wrong with the rest. The
// image is not checked here: CheckImage does that against Podman, with the
// runbook line. brokerd's config loader calls Check on every section.
func (c *Config) Check() error {
	c.fill()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if path, ok := strings.CutPrefix(c.Socket, "unix://"); !ok || !strings.HasPrefix(path, "/") {
		bad("socket must be a unix:// URL with an absolute path, like %q", DefaultSocket)
	}
	if c.Image != "" && c.Image != AutoImage && !imageID.MatchString(c.Image) {
		bad("image must be %q or the tool image's full id, sha256: and 64 hex digits, as brokerd image build prints it", AutoImage)
	}
	if c.TimeoutMS < 1 || c.TimeoutMS > maxTimeoutMS {
		bad("timeout_ms must be 1 to %d", maxTimeoutMS)
	}
	if c.MemoryBytes < minMemoryBytes {
		bad("memory_bytes must be at least %d", minMemoryBytes)
	}
	if c.Pids < minPids {
		bad("pids must be at least %d", minPids)
	}
	if c.NoFile < minNoFile {
		bad("nofile must be at least %d", minNoFile)
	}
	if c.OutputBytes < 1 || c.OutputBytes > maxOutputBytes {
		bad("output_bytes must be 1 to %d", maxOutputBytes)
	}
	if c.CPUMillicores < minCPU || c.CPUMillicores > maxCPU {
		bad("cpu_millicores must be %d to %d (1000 is one CPU)", minCPU, maxCPU)
	}
	if c.FileBytes < minFileBytes {
		bad("file_bytes must be at least %d", minFileBytes)
	}
	if c.TmpfsBytes < minTmpfsBytes {
		bad("tmpfs_bytes must be at least %d", minTmpfsBytes)
	}
	if uid, _, ok := strings.Cut(c.User, ":"); !userID.MatchString(c.User) || !ok {
		bad("user must be a numeric uid:gid, like %q", DefaultUser)
	} else if n, err := strconv.ParseUint(uid, 10, 32); err != nil || n == 0 {
		bad("user must not be root (uid 0): the tools run unprivileged")
	}
	if c.UserNS != "" && c.UserNS != "keep-id" && c.UserNS != "auto" {
		bad(`userns must be "", "keep-id" or "auto"`)
	}
	if c.SharedDir != "" && (!filepath.IsAbs(c.SharedDir) || filepath.Clean(c.SharedDir) != c.SharedDir) {
		bad("shared_dir must be a clean absolute path")
	}
	seen := map[string]bool{}
	for _, l := range c.AcceptUnenforced {
		switch {
		case !slices.Contains(AcceptableLimits, l):
			bad("accept_unenforced: %q is not a limit brokerd checks; it may name %s", l, strings.Join(AcceptableLimits, ", "))
		case seen[l]:
			bad("accept_unenforced names %q twice", l)
		}
		seen[l] = true
	}
	return errors.Join(errs...)
}
