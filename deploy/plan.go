// Package deploy is the whole deployment as data: one OS user per role, the
// groups that share each socket directory between two roles, every directory
// and file with its owner, group and mode, and every systemd unit with its
// user, command and hardening (issue 13; pre-M1 §4, §7; M3a §14).
//
// Everything else is generated from the plan or checked against it: `boxmaker
// deploy apply` on a plain systemd distribution, the NixOS module (which reads
// the committed plan.json), and the access-matrix tests. So no two copies of
// the layout can drift.
package deploy

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Params choose the names and places of one deployment. Default is the real
// one; tests use another prefix and a temporary root so that they never
// touch a real deployment.
type Params struct {
	// Prefix starts every user, group and unit name: "boxmaker-".
	Prefix string `json:"prefix"`
	// Home is BOXMAKER_HOME.
	Home string `json:"home"`
	// Etc holds the configuration files, grants and secrets.
	Etc string `json:"etc"`
	// Bin is the directory of the installed boxmaker executable; the role
	// symlinks are made beside it.
	Bin string `json:"bin"`
	// UnitDir and TmpfilesDir are where the unit files and the tmpfiles.d
	// file go.
	UnitDir     string `json:"unit_dir"`
	TmpfilesDir string `json:"tmpfiles_dir"`
}

// Default is the real deployment's parameters.
func Default() Params {
	return Params{Prefix: "boxmaker-", Home: "/var/lib/boxmaker", Etc: "/etc/boxmaker", Bin: "/usr/local/bin",
		UnitDir: "/etc/systemd/system", TmpfilesDir: "/etc/tmpfiles.d"}
}

var prefixSyntax = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}-$`)

// Check refuses parameters that would make names the system cannot hold or
// paths that are not absolute and clean.
func (p Params) Check() error {
	if !prefixSyntax.MatchString(p.Prefix) {
		return fmt.Errorf("prefix %q: want a lowercase letter, at most 11 more letters or digits, and a final '-'", p.Prefix)
	}
	for _, f := range []struct{ name, path string }{{"home", p.Home}, {"etc", p.Etc}, {"bin", p.Bin},
		{"unit-dir", p.UnitDir}, {"tmpfiles-dir", p.TmpfilesDir}} {
		if !filepath.IsAbs(f.path) || filepath.Clean(f.path) != f.path || f.path == "/" {
			return fmt.Errorf("%s %q: want a clean absolute path other than /", f.name, f.path)
		}
		if strings.ContainsAny(f.path, " \t\n\"'\\%") {
			return fmt.Errorf("%s %q: no spaces, quotes, backslashes or %% (unit and tmpfiles lines hold it)", f.name, f.path)
		}
	}
	// The longest socket path must fit sockaddr_un (107 bytes and a NUL).
	if n := len(filepath.Join(p.Home, "run", "broker-gateway", "gateway.sock")); n > 107 {
		return fmt.Errorf("home %q: its socket paths would be %d bytes, over the 107 a Unix socket allows", p.Home, n)
	}
	return nil
}

// Plan is the deployment. Its JSON (plan.json, `boxmaker deploy plan
// --json`) is what the NixOS module reads.
type Plan struct {
	Params
	Users   []User   `json:"users"`
	Groups  []Group  `json:"groups"`
	Paths   []Path   `json:"paths"`
	Sockets []Socket `json:"sockets"`
	Units   []Unit   `json:"units"`
	// Access is every subject's expected access to every socket and state
	// path, computed from the modes above (access.go); the access-matrix
	// tests compare the real system with it.
	Access []Access `json:"access"`
}

// The roles, in the order every list follows. tools is not a role of the
// binary: it is the user the rootless Podman service runs as, whose
// subordinate ids the tool containers run in.
var roleNames = []string{"loopd", "brokerd", "gatewayd", "inferproxy", "tools"}

// User is one system user, with a primary group of the same name.
type User struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Home is the user's home directory: /nonexistent for the roles (they
	// keep nothing there), the Podman storage for tools.
	Home string `json:"home"`
	// Groups are its supplementary groups: the pair groups of the sockets
	// it connects to.
	Groups []string `json:"groups"`
	// SubIDs is true when the user needs a range in /etc/subuid and
	// /etc/subgid (rootless Podman).
	SubIDs bool `json:"subids"`
}

// Group is one group. A role's primary group has Members empty; a pair
// group lists the client role's user; the owner group's members are the
// humans the installer names (deploy apply --owner).
type Group struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
	Why     string   `json:"why"`
}

// Path kinds and content rules.
const (
	KindDir  = "dir"
	KindFile = "file"
	KindLink = "link"

	// ContentExact: the file's bytes are the plan's (Text); apply writes
	// them and refuses a file that differs.
	ContentExact = "exact"
	// ContentSeed: apply writes Text when the file is missing; after that
	// the bytes are the owner's (configuration), only owner, group and
	// mode are checked.
	ContentSeed = "seed"
	// ContentOwner: apply never writes it (a secret, the owner's memory);
	// when it exists its owner, group and mode are checked.
	ContentOwner = "owner"
)

// Path is one directory, file or symlink.
type Path struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`
	Owner string `json:"owner"`
	Group string `json:"group"`
	// Mode is octal with four digits ("2710"); a link has none.
	Mode string `json:"mode,omitempty"`
	// Target is a link's target.
	Target string `json:"target,omitempty"`
	// Content says who writes a file (ContentExact, ContentSeed,
	// ContentOwner) and Text is what apply writes.
	Content string `json:"content,omitempty"`
	Text    string `json:"text,omitempty"`
	// State marks a path of the access matrix (a place roles keep state
	// or secrets in), tested for read and write by every subject.
	State bool   `json:"state,omitempty"`
	Why   string `json:"why"`
}

// Socket is one listening socket and who may connect to it.
type Socket struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Listener string `json:"listener"`
	// Client is the role (or "owner") that connects; Peer is the [peers]
	// rule the listener's config names: a user or a group. Podman's socket
	// has neither: Podman checks no peer, so only the file modes guard it.
	Client    string `json:"client"`
	PeerUser  string `json:"peer_user,omitempty"`
	PeerGroup string `json:"peer_group,omitempty"`
}

// New builds the plan for p. It does not check p (Check does).
func New(p Params) Plan {
	b := builder{p: p, plan: Plan{Params: p}}
	b.users()
	b.paths()
	b.units()
	b.plan.Access = access(b.plan)
	return b.plan
}

type builder struct {
	p    Params
	plan Plan
}

func (b *builder) name(s string) string { return b.p.Prefix + s }
func (b *builder) home(s ...string) string {
	return filepath.Join(append([]string{b.p.Home}, s...)...)
}
func (b *builder) etc(s ...string) string { return filepath.Join(append([]string{b.p.Etc}, s...)...) }

// pairs are the socket directories run/<client>-<listener>/ (docs/layout.md).
var pairs = []struct {
	dir, socket, listener, client string
}{
	{"loop-broker", "broker.sock", "brokerd", "loopd"},
	{"owner-broker", "admin.sock", "brokerd", "owner"},
	{"loop-infer", "infer.sock", "inferproxy", "loopd"},
	{"broker-gateway", "gateway.sock", "gatewayd", "brokerd"},
	{"owner-loop", "loop.sock", "loopd", "owner"},
	{"gateway-loop", "loop.sock", "loopd", "gatewayd"},
	{"broker-tools", "podman.sock", "tools", "brokerd"},
	// brokerd starts each scheduled job's run on loopd (issue 17).
	{"broker-loop", "loop.sock", "loopd", "brokerd"},
}

// pairGroup is the group of a pair directory: the owner group for the
// owner's two, a group of its own for each pair of roles.
func (b *builder) pairGroup(dir, client string) string {
	if client == "owner" {
		return b.name("owner")
	}
	return b.name(dir)
}

func (b *builder) users() {
	for _, r := range roleNames {
		u := User{Name: b.name(r), Role: r, Home: "/nonexistent", Groups: []string{}}
		if r == "tools" {
			u.Home = b.home("tools")
			u.SubIDs = true
		}
		for _, pr := range pairs {
			if pr.client == r {
				u.Groups = append(u.Groups, b.pairGroup(pr.dir, pr.client))
			}
		}
		b.plan.Users = append(b.plan.Users, u)
		b.plan.Groups = append(b.plan.Groups, Group{Name: u.Name, Members: []string{},
			Why: "the primary group of " + r})
	}
	b.plan.Groups = append(b.plan.Groups, Group{Name: b.name("owner"), Members: []string{},
		Why: "the humans who may run bxctl (approvals, chat) and read the audit log; deploy apply --owner adds them"})
	for _, pr := range pairs {
		if pr.client == "owner" {
			continue
		}
		b.plan.Groups = append(b.plan.Groups, Group{Name: b.pairGroup(pr.dir, pr.client), Members: []string{b.name(pr.client)},
			Why: fmt.Sprintf("lets %s reach %s's %s in run/%s/", pr.client, pr.listener, pr.socket, pr.dir)})
	}
	for _, pr := range pairs {
		s := Socket{Name: pr.socket, Path: b.home("run", pr.dir, pr.socket), Listener: b.name(pr.listener), Client: pr.client}
		switch {
		case pr.listener == "tools":
			// Podman's own listener: no [peers] rule to render or check.
		case pr.client == "owner":
			s.PeerGroup = b.name("owner")
		default:
			s.PeerUser = b.name(pr.client)
		}
		b.plan.Sockets = append(b.plan.Sockets, s)
	}
}

// UserFor is the user of a role ("loopd") in this plan.
func (p Plan) UserFor(role string) string { return p.Prefix + role }
