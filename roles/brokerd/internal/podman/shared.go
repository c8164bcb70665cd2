package podman

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"boxmaker/runbook"
)

// A Podman service that runs as another user than brokerd (rootless, as
// the deployment's tools user) reads two things of brokerd's by path: the
// seccomp profile, at every create, and each http_fetch's egress socket,
// which runc bind-mounts into the container. It can reach nothing of
// brokerd's home, so brokerd puts both in [podman] shared_dir, a directory
// brokerd owns whose group holds the service's user alone, mode 02710:
// the group may only pass through, to names brokerd made (the profile, and
// one random directory per call), and the setgid bit gives what brokerd
// makes inside that group (docs/decisions.md, "Where tool containers run").

// ErrSharedDir is what a refused shared_dir's error wraps.
var ErrSharedDir = errors.New("podman: [podman] shared_dir is not fit to share")

// egressDirMode lets the shared directory's group (the service's user)
// pass through a call's egress directory to its socket and CA file, which
// runc bind-mounts; nobody else on the host gets in.
const egressDirMode = 0o710

// checkSharedDir refuses a shared directory that is missing, not a
// directory, not brokerd's own, or open to others than its group: it is
// the plan's to make (owner brokerd, group the service's, mode 02710),
// and a wrong one would hand the profile or a call's socket to someone
// else, or fail every http_fetch later.
func checkSharedDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%w: %v; %s", ErrSharedDir, err, runbook.See("podman-shared-dir"))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory; %s", ErrSharedDir, dir, runbook.See("podman-shared-dir"))
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%w: %s is not owned by brokerd's user (uid %d); %s", ErrSharedDir, dir, os.Geteuid(), runbook.See("podman-shared-dir"))
	case fi.Mode().Perm()&0o027 != 0:
		return fmt.Errorf("%w: %s has mode %04o; want 02710 (group: pass through only, others: nothing); %s",
			ErrSharedDir, dir, fi.Mode().Perm(), runbook.See("podman-shared-dir"))
	}
	return nil
}

// prepareShared writes the seccomp profile where the service can read it:
// shared_dir when set, else brokerd's state directory (a root service
// reads anything). It returns the profile's path and where egress proxies
// make their directories ("" is the system's temporary directory).
func prepareShared(cfg Config, stateDir string) (profile, egressDir string, err error) {
	if cfg.SharedDir == "" {
		profile, err = writeSeccompProfile(stateDir)
		return profile, "", err
	}
	if err := checkSharedDir(cfg.SharedDir); err != nil {
		return "", "", err
	}
	profile, err = writeSeccompProfile(cfg.SharedDir)
	return profile, cfg.SharedDir, err
}

// openEgressDir gives the shared directory's group a way through a call's
// egress directory (made 0700), when there is a shared directory.
func (r *Runtime) openEgressDir(socket string) error {
	if r.egressDir == "" {
		return nil
	}
	return os.Chmod(filepath.Dir(socket), egressDirMode)
}
