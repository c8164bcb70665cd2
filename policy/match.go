package policy

import "boxmaker/wire"

// match is the grant chosen for a call, with what the runner mounts or
// allows: for read_file and write_file the longest matched path, for shell
// every path of the grant, for http_fetch every host of the grant.
type match struct {
	g     *grant
	paths []string
	hosts []string
}

// matchGrants applies M3a §3, "Matching", to a valid set and parsed
// arguments, in scope: only the grants scope sees take part. It returns the
// winning grant, or nil and the reason for the denial.
func matchGrants(set *GrantSet, scope Scope, args Args, taint wire.DataClass, now wire.Timestamp) (*match, wire.DenyReason) {
	var best *grant
	bestPath := ""
	onlyExpiry, onlyTaint := false, false
	for i := range set.grants {
		g := &set.grants[i]
		if g.tool != args.Tool() || !scope.sees(g.g) {
			continue
		}
		// Each rule is evaluated in full, so a grant ruled out by expiry can
		// still be told apart as "only by expiry" (taint and constraints pass).
		expired := g.g.Expires != nil && now >= *g.g.Expires
		tainted := taint > g.g.MaxTaint
		path, covered := covers(g, args, g.g.Constraints.Hosts)
		// A host the grant covers but not at this taint is ruled out by
		// taint (hostsAt); only a secret grant's hosts narrow.
		if covered && narrows(g, taint) {
			if _, ok := covers(g, args, g.g.SecretHosts); !ok {
				tainted = true
			}
		}
		switch {
		case expired:
			onlyExpiry = onlyExpiry || !tainted && covered
		case tainted:
			onlyTaint = onlyTaint || covered
		case covered:
			// Grants are sorted by id, so on a tie the earlier one stays.
			if best == nil || rank(g.g.Mode) > rank(best.g.Mode) {
				best, bestPath = g, path
			}
		}
	}
	switch {
	case best != nil:
		return newMatch(best, args, bestPath, taint), 0
	case onlyExpiry:
		return nil, wire.GrantExpired
	case onlyTaint:
		return nil, wire.TaintTooHigh
	}
	return nil, wire.NoGrant
}

// rank orders modes by restriction: deny beats ask beats auto.
func rank(m wire.Mode) int {
	switch m {
	case wire.Deny:
		return 3
	case wire.Ask:
		return 2
	case wire.Auto:
		return 1
	}
	return 4 // unreachable for a decoded grant; an unknown mode would be most restrictive
}

func newMatch(g *grant, args Args, path string, taint wire.DataClass) *match {
	switch args.(type) {
	case ReadFileArgs, WriteFileArgs:
		return &match{g: g, paths: []string{path}}
	case ShellArgs:
		return &match{g: g, paths: g.g.Constraints.Paths}
	case RememberArgs, RecallArgs:
		return &match{g: g} // no mount, no egress: brokerd runs them itself
	}
	return &match{g: g, hosts: hostsAt(g, taint)}
}

// hostsAt are the hosts an http_fetch grant covers, and its call's
// egress, at session taint t. A grant that names a secret covers only the
// hosts cleared for the secret (secret_hosts) once the session is secret,
// which its own results make it: the session may then hold the value in a
// form redaction cannot find (reversed, split), and the grant's other
// hosts were not cleared to receive it. Without this, the max_taint =
// "secret" that such a grant needs to be used twice would clear all its
// hosts for the value (issue 15, review).
func hostsAt(g *grant, t wire.DataClass) []string {
	if narrows(g, t) {
		return g.g.SecretHosts
	}
	return g.g.Constraints.Hosts
}

// narrows reports whether hostsAt(g, t) is g's secret_hosts.
func narrows(g *grant, t wire.DataClass) bool {
	return g.g.Secret != nil && g.g.SecretHosts != nil && t >= wire.Secret
}

// covers is the "Covered when" column of M3a §3's tool table, with hosts
// as the http_fetch grant's hosts; path is the longest matched grant path
// for read_file and write_file.
func covers(g *grant, args Args, hosts []string) (path string, ok bool) {
	paths := g.g.Constraints.Paths
	switch a := args.(type) {
	case ReadFileArgs:
		return longestInside(paths, a.Path, false)
	case WriteFileArgs:
		// Writing the grant path itself would replace the mounted directory.
		return longestInside(paths, a.Path, true)
	case ShellArgs:
		if a.Cwd == nil {
			return "", len(paths) == 0
		}
		_, ok = longestInside(paths, *a.Cwd, false)
		return "", ok
	case HTTPFetchArgs:
		for _, h := range hosts {
			if hostMatches(h, a.Host) {
				return "", true
			}
		}
	case RememberArgs, RecallArgs:
		// Their grants have no constraints (rule 6): tool, taint and
		// expiry decide.
		return "", true
	}
	return "", false
}

// longestInside is the longest of dirs that contains p (strictly, when
// strict is set: not p itself).
func longestInside(dirs []string, p string, strict bool) (string, bool) {
	best, found := "", false
	for _, d := range dirs {
		if inside(d, p) && !(strict && d == p) && (!found || len(d) > len(best)) {
			best, found = d, true
		}
	}
	return best, found
}
