package podman

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.podman.io/common/pkg/seccomp"
	"golang.org/x/sys/unix"
)

// The seccomp profile of every tool container: Podman's default profile,
// with the calls that create or enter namespaces taken out and refused.
// Unprivileged user namespaces are enabled on the project's kernels, and
// the default profile allows unshare, setns and every clone: a command
// could run "unshare -r" and get a full capability set in a new user
// namespace, the usual first step of a kernel exploit (issue 12, item 4;
// docs/decisions.md, "No namespaces inside a tool container").
//
//   - unshare and setns: refused whatever their arguments (EPERM).
//   - clone: allowed only with no CLONE_NEW* flag (fork, vfork and threads
//     stay possible); with any of them, EPERM.
//   - clone3: its flags live in memory, where seccomp cannot look, so it
//     fails with ENOSYS, and libc and Go fall back to clone, which is
//     filtered.
//
// Podman 4.3 ignores spec fields it does not know, so brokerd does not
// take this on trust: the startup probe tries each call from inside.

// seccompFile is the profile's name in brokerd's Podman state directory.
const seccompFile = "seccomp.json"

// cloneNewFlags is every CLONE_NEW* flag clone(2) takes: mount, cgroup,
// UTS, IPC, user, PID and network namespaces. CLONE_NEWTIME (0x80) is
// clone3's and unshare's only: in clone's flags the low byte is the exit
// signal.
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// nsCalls are the calls whose rules in the default profile are replaced.
var nsCalls = []string{"unshare", "setns", "clone", "clone3"}

// seccompProfile is the profile, as JSON.
func seccompProfile() ([]byte, error) {
	p := seccomp.DefaultProfile()
	kept := p.Syscalls[:0]
	for _, sc := range p.Syscalls {
		names := slices.DeleteFunc(append(sc.Names[:0:0], sc.Names...), func(n string) bool { return slices.Contains(nsCalls, n) })
		if len(names) == 0 || slices.Contains(nsCalls, sc.Name) {
			continue
		}
		sc.Names = names
		kept = append(kept, sc)
	}
	eperm, enosys := uint(unix.EPERM), uint(unix.ENOSYS)
	deny := func(names ...string) *seccomp.Syscall {
		return &seccomp.Syscall{Names: names, Action: seccomp.ActErrno, Errno: "EPERM", ErrnoRet: &eperm, Args: []*seccomp.Arg{}}
	}
	kept = append(kept, deny("unshare", "setns"),
		&seccomp.Syscall{Names: []string{"clone3"}, Action: seccomp.ActErrno, Errno: "ENOSYS", ErrnoRet: &enosys, Args: []*seccomp.Arg{},
			Comment: "clone3's flags cannot be filtered: make libc fall back to clone"})
	// clone's flags are its first argument, but its second on s390.
	for _, arch := range []struct {
		index uint
		in    seccomp.Filter
		out   seccomp.Filter
	}{{0, seccomp.Filter{}, seccomp.Filter{Arches: []string{"s390", "s390x"}}}, {1, seccomp.Filter{Arches: []string{"s390", "s390x"}}, seccomp.Filter{}}} {
		allow := &seccomp.Syscall{Names: []string{"clone"}, Action: seccomp.ActAllow, Includes: arch.in, Excludes: arch.out,
			Args:    []*seccomp.Arg{{Index: arch.index, Value: cloneNewFlags, ValueTwo: 0, Op: seccomp.OpMaskedEqual}},
			Comment: "clone without any CLONE_NEW* flag"}
		kept = append(kept, allow)
		// One refusal per flag: seccomp has no "masked not equal", and
		// without these the profile's default action (ENOSYS) would answer.
		for bit := uint64(1); bit != 0; bit <<= 1 {
			if bit&cloneNewFlags == 0 {
				continue
			}
			d := deny("clone")
			d.Includes, d.Excludes = arch.in, arch.out
			d.Args = []*seccomp.Arg{{Index: arch.index, Value: bit, ValueTwo: bit, Op: seccomp.OpMaskedEqual}}
			kept = append(kept, d)
		}
	}
	p.Syscalls = kept
	return json.MarshalIndent(p, "", "\t")
}

// writeSeccompProfile writes the profile into dir, replacing what an
// earlier start wrote, and returns its path. The Podman service reads it
// at every create, so it must be readable by the service's user.
func writeSeccompProfile(dir string) (string, error) {
	b, err := seccompProfile()
	if err != nil {
		return "", fmt.Errorf("podman: building the seccomp profile: %w", err)
	}
	path := filepath.Join(dir, seccompFile)
	if err := writeFileAtomic(path, b, 0o644); err != nil {
		return "", fmt.Errorf("podman: writing the seccomp profile: %w", err)
	}
	return path, nil
}

// writeFileAtomic writes b to path through a synced temporary file and a
// rename, then syncs the directory.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
