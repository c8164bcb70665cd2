package policy

import (
	"slices"

	"boxmaker/wire"
)

// MountWritable says whether the runner mounts a call's paths writable for
// tool t: write_file, and shell without a secret. A shell that holds its
// grant's secret writes nothing of the host, so that no file keeps the
// value outside the secrets directory (roles/brokerd/internal/runner).
// It lives here so that the runner and `bxctl grants check --fix`, which
// gives the tools' uid what each grant's folder needs, cannot disagree.
func MountWritable(t Tool, hasSecret bool) bool {
	return t == WriteFile || t == Shell && !hasSecret
}

// GrantMounts is what the runner may mount under one grant: its paths,
// writable or not.
type GrantMounts struct {
	Grant    string
	Tool     Tool
	Paths    []string
	Writable bool
}

// Mounts lists, by grant id, every grant of s whose calls mount host
// paths (read_file, write_file, shell), except deny grants, which never
// run a tool.
func (s *GrantSet) Mounts() []GrantMounts {
	var out []GrantMounts
	for _, g := range s.grants {
		switch {
		case g.g.Mode == wire.Deny:
		case g.tool == ReadFile, g.tool == WriteFile, g.tool == Shell:
			out = append(out, GrantMounts{Grant: g.id, Tool: g.tool, Paths: slices.Clone(g.g.Constraints.Paths),
				Writable: MountWritable(g.tool, g.g.Secret != nil)})
		}
	}
	return out
}

// Reaches says why the valid absolute path lies inside, contains or is one
// of p's paths, by the loading rule 9 check (symlinks of its existing
// prefix followed as brokerd follows them), or returns "".
func (p *Protected) Reaches(path string) string {
	if err := CheckPath(path); err != nil {
		return "the path " + err.Error()
	}
	real, err := resolveSeen(path, nil)
	return p.check(path, real, err)
}
