package policy_test

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"boxmaker/policy"
	"boxmaker/wire"
)

// The oracle: what the spec says must happen, written as plainly as
// possible and without any of policy's code. It reads the generator's
// structures, never JSON, and checks forms with regular expressions and
// strings.Split rather than policy's scanners.

type expect struct {
	outcome string   // "allowed", "ask" or a deny reason
	grant   string   // matched grant id, "" when none
	paths   []string // for allowed: what the runner gets
	hosts   []string
	secret  *policy.SecretUse // for allowed: the grant's secret, nil when none
}

var (
	reID    = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	reLabel = `[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?`
	reHost  = regexp.MustCompile(`^` + reLabel + `(\.` + reLabel + `)+$`)
	reNum   = regexp.MustCompile(`(^|\.)([0-9]+|0x[0-9a-f]*)$`)
	reURL   = regexp.MustCompile(`^https://([^/:@]*)(:443)?(/[!-~]*)?$`)
)

// hostMemo only saves time: the generator's hosts come from a short list.
// It stops growing at a bound, so fuzzing does not fill memory.
var (
	hostMemo     sync.Map
	hostMemoSize atomic.Int32
)

func oracleHost(h string) bool {
	if v, ok := hostMemo.Load(h); ok {
		return v.(bool)
	}
	ok := len(h) <= 253 && reHost.MatchString(h) && !reNum.MatchString(h)
	if hostMemoSize.Add(1) < 1000 {
		hostMemo.Store(h, ok)
	}
	return ok
}

func oraclePattern(p string) bool {
	if strings.HasPrefix(p, "*.") {
		return oracleHost(p[2:])
	}
	return oracleHost(p)
}

func oraclePath(p string) bool {
	if p == "/" {
		return true
	}
	if len(p) > 4096 || strings.ContainsRune(p, 0) || !strings.HasPrefix(p, "/") {
		return false
	}
	for _, c := range strings.Split(p, "/")[1:] {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// components of a valid path; "/" has none.
func components(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p, "/")[1:]
}

func oracleInside(dir, p string) bool {
	d, q := components(dir), components(p)
	if len(d) > len(q) {
		return false
	}
	for i := range d {
		if d[i] != q[i] {
			return false
		}
	}
	return true
}

func oracleURLHost(u string) (string, bool) {
	m := reURL.FindStringSubmatch(u)
	if len(u) > 2048 || m == nil || !oracleHost(m[1]) {
		return "", false
	}
	return m[1], true
}

var oracleRule6 = map[string][2]string{ // tool: paths rule, hosts rule
	"read_file": {"required", "empty"}, "write_file": {"required", "empty"},
	"shell": {"optional", "empty"}, "http_fetch": {"empty", "required"},
	"remember": {"empty", "empty"}, "recall": {"empty", "empty"},
}

func oracleRuleOK(rule string, n int) bool {
	return rule == "optional" || rule == "required" && n > 0 || rule == "empty" && n == 0
}

func oracleGrantValid(id string, g wire.Grant) bool {
	rules, known := oracleRule6[g.Tool]
	if !reID.MatchString(id) || !known || !oracleSecretValid(g) || len(g.Constraints.Patterns) > 0 {
		return false
	}
	if g.Job != nil && !reID.MatchString(*g.Job) {
		return false
	}
	if !oracleRuleOK(rules[0], len(g.Constraints.Paths)) || !oracleRuleOK(rules[1], len(g.Constraints.Hosts)) {
		return false
	}
	for _, p := range g.Constraints.Paths {
		if !oraclePath(p) {
			return false
		}
	}
	for _, h := range g.Constraints.Hosts {
		if !oraclePattern(h) {
			return false
		}
	}
	return true
}

var (
	reSecretName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	reToken      = regexp.MustCompile("^[-!#$%&'*+.^_`|~0-9A-Za-z]+$")
	reTransport  = regexp.MustCompile(`^(host|content-length|transfer-encoding|connection|upgrade|te|trailer|keep-alive|expect|http2-settings|proxy-.*)$`)
	rePrintable  = regexp.MustCompile(`^[ -~]*$`)
)

// oracleSecretValid is rule 4 as issue 15 has it: the secret_* keys only
// with a secret; a secret only for shell (delivered as a file) and
// http_fetch (in a header, to hosts its hosts cover), always with
// result_class secret.
func oracleSecretValid(g wire.Grant) bool {
	if g.Secret == nil {
		return g.SecretHeader == nil && g.SecretFormat == nil && g.SecretHosts == nil && g.SecretDeliver == nil
	}
	if !reSecretName.MatchString(*g.Secret) || g.ResultClass != wire.Secret {
		return false
	}
	switch g.Tool {
	case "shell":
		return g.SecretHeader == nil && g.SecretFormat == nil && g.SecretHosts == nil && g.SecretDeliver != nil && *g.SecretDeliver == "file"
	case "http_fetch":
		if g.SecretDeliver != nil || g.SecretHeader == nil || !reToken.MatchString(*g.SecretHeader) ||
			reTransport.MatchString(strings.ToLower(*g.SecretHeader)) {
			return false
		}
		if f := g.SecretFormat; f != nil && (strings.Count(*f, "{}") != 1 || !rePrintable.MatchString(*f)) {
			return false
		}
		if g.SecretHosts != nil && len(g.SecretHosts) == 0 {
			return false
		}
		for _, p := range g.SecretHosts {
			if !oraclePattern(p) || !oracleCovered(g.Constraints.Hosts, p) {
				return false
			}
		}
		return true
	}
	return false
}

// oracleCovered: every host p matches, one of hosts matches too.
func oracleCovered(hosts []string, p string) bool {
	for _, q := range hosts {
		wild := strings.HasPrefix(q, "*.")
		switch {
		case strings.HasPrefix(p, "*."):
			if wild && strings.HasSuffix(p[1:], q[1:]) {
				return true
			}
		case q == p, wild && strings.HasSuffix(p, q[1:]):
			return true
		}
	}
	return false
}

// oracleSecretUse is what the runner must be given for g's secret.
func oracleSecretUse(g wire.Grant) *policy.SecretUse {
	if g.Secret == nil {
		return nil
	}
	if g.Tool == "shell" {
		return &policy.SecretUse{Name: *g.Secret, File: true}
	}
	u := &policy.SecretUse{Name: *g.Secret, Header: *g.SecretHeader, Format: "{}", Hosts: g.SecretHosts}
	if g.SecretFormat != nil {
		u.Format = *g.SecretFormat
	}
	if u.Hosts == nil {
		u.Hosts = g.Constraints.Hosts
	}
	return u
}

var oracleSchema = map[string]map[string]bool{ // tool: member: required
	"read_file":  {"path": true},
	"write_file": {"path": true, "content": true},
	"shell":      {"command": true, "cwd": false},
	"http_fetch": {"url": true},
	"remember":   {"title": true, "text": true, "id": false},
	"recall":     {"query": false, "id": false}, // exactly one: oracleMemoryArgs
}

// oracleMemoryArgs is what the memory tools ask of their members beyond
// the schema: lengths in bytes, an id of the id form, and recall's one of
// query or id.
func oracleMemoryArgs(tool string, got map[string]string) bool {
	if id, ok := got["id"]; ok && !reID.MatchString(id) {
		return false
	}
	switch tool {
	case "remember":
		return len(got["title"]) >= 1 && len(got["title"]) <= 200 && len(got["text"]) <= 16384
	case "recall":
		q, hasQ := got["query"]
		_, hasID := got["id"]
		return hasQ != hasID && (!hasQ || len(q) >= 1 && len(q) <= 500)
	}
	return true
}

var (
	severity    = map[wire.Mode]int{wire.Deny: 0, wire.Ask: 1, wire.Auto: 2}
	modeOutcome = map[wire.Mode]string{wire.Deny: "denied_by_grant", wire.Ask: "ask", wire.Auto: "allowed"}
)

// oracleArgs returns the string members of well-formed arguments, or false.
func oracleArgs(tool string, a genArgs) (map[string]string, bool) {
	schema := oracleSchema[tool]
	if a.notObject != "" || strings.Trim(a.trailing, " \t\n\r") != "" {
		return nil, false
	}
	got := map[string]string{}
	for _, m := range a.members {
		if _, known := schema[m.name]; !known || m.kind != 's' {
			return nil, false
		}
		if _, dup := got[m.name]; dup {
			return nil, false
		}
		got[m.name] = m.s
	}
	for name, req := range schema {
		if _, ok := got[name]; req && !ok {
			return nil, false
		}
	}
	for _, name := range []string{"path", "cwd"} {
		if p, ok := got[name]; ok && !oraclePath(p) {
			return nil, false
		}
	}
	if !oracleMemoryArgs(tool, got) {
		return nil, false
	}
	if u, ok := got["url"]; ok {
		host, valid := oracleURLHost(u)
		if !valid {
			return nil, false
		}
		got["host"] = host
	}
	return got, true
}

// oracleWith is the oracle with protected as the paths no grant may reach:
// a grant path that is one of them, or above or below one by whole
// components, invalidates the set (rule 9).
func oracleWith(c genCase, protected []string) expect {
	for id, g := range c.grants {
		if !oracleGrantValid(id, g) {
			return expect{outcome: "grants_invalid"}
		}
		for _, gp := range g.Constraints.Paths {
			for _, pp := range protected {
				if oracleInside(gp, pp) || oracleInside(pp, gp) {
					return expect{outcome: "grants_invalid"}
				}
			}
		}
	}
	if c.taint != wire.Public && c.taint != wire.Private && c.taint != wire.Secret {
		return expect{outcome: "state_unreadable"}
	}
	if _, known := oracleRule6[c.tool]; !known {
		return expect{outcome: "no_grant"}
	}
	args, ok := oracleArgs(c.tool, c.args)
	if !ok {
		return expect{outcome: "invalid_arguments"}
	}
	type alive struct {
		id   string
		mode wire.Mode
		e    expect
		g    wire.Grant
	}
	var live []alive
	onlyExpired, onlyTainted := false, false
	for id, g := range c.grants {
		// A job's session sees only its job's grants; an interactive one
		// only the grants without a job.
		inScope := g.Job == nil && c.scope == "" || g.Job != nil && *g.Job == c.scope
		if g.Tool != c.tool || !inScope {
			continue
		}
		covered, e := oracleCovers(c.tool, g, args)
		expired := g.Expires != nil && !(c.now < *g.Expires)
		tainted := c.taint > g.MaxTaint
		// A grant with a secret, in a secret session, covers its
		// secret_hosts alone.
		if c.tool == "http_fetch" && g.Secret != nil && g.SecretHosts != nil && c.taint == wire.Secret {
			narrowed := g
			narrowed.Constraints.Hosts = g.SecretHosts
			if ok, ne := oracleCovers(c.tool, narrowed, args); ok {
				e = ne
			} else if covered {
				tainted = true
			}
		}
		if expired && !tainted && covered {
			onlyExpired = true
		}
		if tainted && !expired && covered {
			onlyTainted = true
		}
		if !expired && !tainted && covered {
			live = append(live, alive{id, g.Mode, e, g})
		}
	}
	sort.Slice(live, func(i, j int) bool {
		if severity[live[i].mode] != severity[live[j].mode] {
			return severity[live[i].mode] < severity[live[j].mode]
		}
		return live[i].id < live[j].id
	})
	switch {
	case len(live) > 0:
		e := live[0].e
		e.grant = live[0].id
		e.outcome = modeOutcome[live[0].mode]
		g := live[0].g
		if g.Secret != nil && g.Mode != wire.Deny && c.unavailable[*g.Secret] {
			return expect{outcome: "secret_unavailable", grant: live[0].id}
		}
		e.secret = oracleSecretUse(g)
		return e
	case onlyExpired:
		return expect{outcome: "grant_expired"}
	case onlyTainted:
		return expect{outcome: "taint_too_high"}
	}
	return expect{outcome: "no_grant"}
}

// oracleCovers is the coverage table, and what the runner would be given.
func oracleCovers(tool string, g wire.Grant, args map[string]string) (bool, expect) {
	longest := func(p string, notItself bool) (bool, expect) {
		best := ""
		for _, d := range g.Constraints.Paths {
			if oracleInside(d, p) && !(notItself && d == p) && len(d) > len(best) {
				best = d
			}
		}
		return best != "", expect{paths: []string{best}}
	}
	switch tool {
	case "remember", "recall":
		return true, expect{}
	case "read_file":
		return longest(args["path"], false)
	case "write_file":
		return longest(args["path"], true)
	case "shell":
		cwd, hasCwd := args["cwd"]
		if !hasCwd {
			return len(g.Constraints.Paths) == 0, expect{paths: g.Constraints.Paths}
		}
		ok, _ := longest(cwd, false)
		return ok, expect{paths: g.Constraints.Paths}
	}
	for _, h := range g.Constraints.Hosts {
		if h == args["host"] || strings.HasPrefix(h, "*.") && strings.HasSuffix(args["host"], h[1:]) {
			return true, expect{hosts: g.Constraints.Hosts}
		}
	}
	return false, expect{}
}
