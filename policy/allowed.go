package policy

import (
	"slices"

	"boxmaker/wire"
)

// Allowed is what one claimed Decision lets the runner do. Its fields are
// unexported and only Claim fills them, so the zero Allowed (the only one
// other packages can write) names no tool, no grant and no mount.
type Allowed struct {
	req         wire.ToolRequest
	state       State
	args        Args
	grantID     string
	sha         wire.Hash32
	resultClass wire.DataClass
	untrusted   bool
	paths       []string
	hosts       []string
	secret      *SecretUse // nil when the grant names no secret
}

func newAllowed(d *decision) Allowed {
	g := d.m.g
	return Allowed{
		req: d.req, state: d.state, args: d.args,
		grantID: g.id, sha: g.sha, resultClass: g.g.ResultClass, untrusted: g.g.Untrusted,
		paths: slices.Clone(d.m.paths), hosts: slices.Clone(d.m.hosts), secret: secretUse(g.g),
	}
}

// Tool is the tool to run; 0 for the zero Allowed.
func (a Allowed) Tool() Tool {
	if a.args == nil {
		return 0
	}
	return a.args.Tool()
}

// Args are the parsed arguments; nil for the zero Allowed.
func (a Allowed) Args() Args { return a.args }

// Request is the tool request as received.
func (a Allowed) Request() wire.ToolRequest { return a.req }

// State is the session state the call was decided under.
func (a Allowed) State() State { return a.state }

// GrantID and GrantSha256 name the grant that allowed the call.
func (a Allowed) GrantID() string          { return a.grantID }
func (a Allowed) GrantSha256() wire.Hash32 { return a.sha }

// ResultClass is the class of the result, and Untrusted whether it sets the
// session's untrusted flag: both from the grant.
func (a Allowed) ResultClass() wire.DataClass { return a.resultClass }
func (a Allowed) Untrusted() bool             { return a.untrusted }

// Paths are what the runner mounts: for read_file and write_file the longest
// grant path containing the argument, for shell every path of the grant.
// Empty for http_fetch.
func (a Allowed) Paths() []string { return slices.Clone(a.paths) }

// Hosts are the grant's host patterns, the only egress http_fetch gets.
// Empty for every other tool.
func (a Allowed) Hosts() []string { return slices.Clone(a.hosts) }

// SecretUse is how one grant hands its secret to the tool; it never holds
// the value, which the runner reads from brokerd's secrets directory at run
// time (issue 15).
type SecretUse struct {
	Name   string   // the file name in brokerd's secrets directory
	File   bool     // secret_deliver = "file" (shell); false: the header path (http_fetch)
	Header string   // http_fetch: the header's name as written in the grant
	Format string   // http_fetch: "{}" replaced by the value (default "{}")
	Hosts  []string // http_fetch: secret_hosts, defaulting to the grant's hosts
}

// Secret is how the call gets the grant's secret; false when the grant
// names none. The hosts are a copy.
func (a Allowed) Secret() (SecretUse, bool) {
	if a.secret == nil {
		return SecretUse{}, false
	}
	u := *a.secret
	u.Hosts = slices.Clone(u.Hosts)
	return u, true
}

// secretUse is g's secret as the loading rules have checked it; nil when
// g names none.
func secretUse(g wire.Grant) *SecretUse {
	if g.Secret == nil {
		return nil
	}
	u := &SecretUse{Name: *g.Secret}
	if g.SecretDeliver != nil {
		u.File = *g.SecretDeliver == "file"
		return u
	}
	if g.SecretHeader != nil {
		u.Header = *g.SecretHeader
	}
	u.Format = DefaultSecretFormat
	if g.SecretFormat != nil {
		u.Format = *g.SecretFormat
	}
	u.Hosts = slices.Clone(g.SecretHosts)
	if u.Hosts == nil {
		u.Hosts = slices.Clone(g.Constraints.Hosts)
	}
	return u
}
