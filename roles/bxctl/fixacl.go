package bxctl

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"boxmaker/policy"
	"boxmaker/roles/bxctl/internal/posixacl"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// `grants check --fix` gives each granted path what the tools need to use
// it, as POSIX ACL entries (docs/decisions.md, "Writable grants without
// hand-made ACLs"):
//
//   - the container's process, which runs on the host as a subordinate uid
//     of the tools user, needs rwx on a writable grant's folder and r-x on
//     a read-only one (r-- on a read-only file); on a writable folder a
//     default ACL gives it the same on what is made inside later, and the
//     owner rwx on what the tool makes there (else a tool's file in a 0700
//     folder could be read by no one but root);
//   - the tools user (the rootless OCI runtime resolves the bind mount's
//     source as that user) and brokerd's user (policy resolves grant paths
//     with lstat and readlink) need search (x) on every folder above it.
//
// It changes only what lies inside an owner's home and is the owner's:
// a path outside every owner's home, or reaching a protected path, or
// with a symlink in it, or any component of it from the home down owned
// by someone else, is refused and nothing is changed for it. Above the
// home nothing is changed; if a folder there does not let the tools user
// or brokerd's user search it, the path is refused with that reason.
//
// The core takes the uids, groups and homes as parameters (fixParams);
// the command line (grantsfix.go) looks them up.

// principal is a host user the fix gives something to: its uid and every
// group it is in.
type principal struct {
	name string
	uid  uint32
	gids []uint32
}

// ownerHome is one member of the owner group and its home directory.
type ownerHome struct {
	name string
	uid  uint32
	home string // clean, absolute, not "/"
}

type fixParams struct {
	container principal   // the tool's process, as the host sees it
	walkers   []principal // need search on every folder above a grant path
	owners    []ownerHome
	protected *policy.Protected
	dryRun    bool
}

// fixTarget is one grant path and the grants that name it.
type fixTarget struct {
	path     string
	grants   []string
	writable bool
}

// targetsOf merges the grants' mounts by path, in path order: a path any
// grant mounts writable needs what a writable one needs.
func targetsOf(ms []policy.GrantMounts) []fixTarget {
	at := map[string]int{}
	var out []fixTarget
	for _, m := range ms {
		for _, p := range m.Paths {
			i, ok := at[p]
			if !ok {
				i = len(out)
				at[p] = i
				out = append(out, fixTarget{path: p})
			}
			if !slices.Contains(out[i].grants, m.Grant) {
				out[i].grants = append(out[i].grants, m.Grant)
			}
			out[i].writable = out[i].writable || m.Writable
		}
	}
	slices.SortFunc(out, func(a, b fixTarget) int { return strings.Compare(a.path, b.path) })
	return out
}

// objKey names one attribute of one object, for the dry run's overlay.
type objKey struct {
	dev, ino uint64
	kind     string
}

// change is one attribute to write, and its line.
type change struct {
	n    node
	kind string
	acl  posixacl.ACL
	line string
}

// fixResult counts what a run did.
type fixResult struct{ changes, refused int }

// fixACLs does the fix for every target, printing one line per change and
// one per refused path, in path order.
func fixACLs(p fixParams, targets []fixTarget, out io.Writer) fixResult {
	var res fixResult
	overlay := map[objKey]posixacl.ACL{} // the dry run's changes, so later paths see them
	for _, t := range targets {
		w, changes, why := planFix(p, t, overlay)
		for i, c := range changes {
			if why != "" {
				break
			}
			if p.dryRun {
				overlay[objKey{c.n.st.Dev, c.n.st.Ino, c.kind}] = c.acl
				fmt.Fprintf(out, "dry run: %s\n", wire.Printable(c.line))
				res.changes++
				continue
			}
			if err := setACL(c.n.fd, c.kind, c.acl); err != nil {
				why = fmt.Sprintf("writing the %s of %s failed: %v", c.kind, c.n.path, err)
				if i > 0 {
					why += " (the changes printed above were made)"
				}
				break
			}
			fmt.Fprintln(out, wire.Printable(c.line))
			res.changes++
		}
		w.close()
		if why != "" {
			res.refused++
			grants := "grant"
			if len(t.grants) > 1 {
				grants += "s"
			}
			// Paths and reasons are printed as wire.Printable shows text
			// this command did not write: a grant path may hold anything.
			fmt.Fprintf(out, "%s (%s %s): refused: %s; %s\n", wire.Printable(t.path), grants, strings.Join(t.grants, ", "),
				wire.Printable(why), runbook.See("grant-fix-refused"))
		}
	}
	return res
}

func setACL(fd int, kind string, a posixacl.ACL) error {
	for {
		if err := unix.Fsetxattr(fd, kind, a.Encode(), 0); err != unix.EINTR {
			return err
		}
	}
}
