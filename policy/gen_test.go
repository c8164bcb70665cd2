package policy_test

import (
	"errors"
	"fmt"
	"strings"

	"boxmaker/policy"
	"boxmaker/wire"
)

// xorshift is Marsaglia's xorshift64: small, seeded, and the same on every
// machine, so a failing seed reproduces.
type xorshift struct{ s uint64 }

func newXorshift(seed uint64) *xorshift {
	if seed == 0 {
		seed = 0x9e3779b97f4a7c15 // xorshift never leaves 0
	}
	return &xorshift{seed}
}

func (x *xorshift) next() uint64 {
	x.s ^= x.s << 13
	x.s ^= x.s >> 7
	x.s ^= x.s << 17
	return x.s
}

func (x *xorshift) intn(n int) int { return int(x.next() % uint64(n)) }

// oneIn is true with probability 1/n.
func (x *xorshift) oneIn(n int) bool { return x.intn(n) == 0 }

func pick[T any](x *xorshift, xs []T) T { return xs[x.intn(len(xs))] }

// genCase is one generated call: a grant set (file stem to grant), a session
// taint, a request and a clock. args keeps the arguments' structure so the
// oracle never has to parse JSON.
type genCase struct {
	grants map[string]wire.Grant
	// scope is the session's job ("" : interactive).
	scope string
	// unavailable are the secrets the secret check refuses.
	unavailable map[string]bool
	taint       wire.DataClass
	tool        string
	args        genArgs
	now         wire.Timestamp
	// protected are paths no grant may reach (rule 9), clean, for the
	// oracle; given are the same as handed to policy, some written with a
	// trailing slash, "." or "..", which must change nothing.
	protected, given []string
}

// member is one JSON object member; kind is 's' (string), 'n' (number),
// '0' (null), 'b' (bool) or '[' (array).
type member struct {
	name string
	kind byte
	s    string
}

type genArgs struct {
	members   []member
	notObject string // when set, the whole arguments value instead of an object
	trailing  string // after the object: whitespace (valid) or junk
}

// check is the case's secret check: it refuses the unavailable secrets.
func (c genCase) check(use policy.SecretUse) error {
	if c.unavailable[use.Name] {
		return errors.New("unavailable: " + use.Name)
	}
	return nil
}

func (a genArgs) json() string {
	if a.notObject != "" {
		return a.notObject
	}
	parts := make([]string, len(a.members))
	for i, m := range a.members {
		v := map[byte]string{'n': "1", '0': "null", 'b': "true", '[': `["/a"]`}[m.kind]
		if m.kind == 's' {
			v = jsonString(m.s)
		}
		parts[i] = jsonString(m.name) + ":" + v
	}
	return "{" + strings.Join(parts, ",") + "}" + a.trailing
}

// jsonString quotes s for JSON; the generator's strings are ASCII.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var (
	genNow   = mustTime("2026-09-18T12:00:00.000Z")
	genTools = []string{"read_file", "write_file", "shell", "http_fetch", "remember", "recall"}
	// Jobs (issue 17): the scopes and grants' job keys, the bad ones last.
	genJobs      = []string{"x", "y"}
	genBadJobs   = []string{"X", "", "a_b"}
	genComps     = []string{"a", "b", "ab", "c"}
	genBadPaths  = []string{"a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "", "/a\x00b", "/..", "//"}
	genHosts     = []string{"example.com", "www.example.com", "a.b.example.com", "example.org", "x.example.org", "x.com"}
	genWildcards = []string{"*.example.com", "*.example.org", "*.b.example.com"}
	genBadHosts  = []string{"Example.com", "*.com", "1.2.3.4", "*example.com", "a..com", "com", "-a.com"}
	genBadURLs   = []string{"http://example.com/", "https://Example.com/", "https://example.com:8080/",
		"https://u@example.com/", "https://example.com/a b", "https://1.2.3.4/", "https://example.com?x", "https://example.com./"}
	genIDs    = []string{"a", "b", "c", "d", "ab", "a-b", "a0", "g1", "zz"}
	genBadIDs = []string{"A", "a_b", "", "a.b"}
	genModes  = []wire.Mode{wire.Auto, wire.Ask, wire.Deny}
	genClass  = []wire.DataClass{wire.Public, wire.Private, wire.Secret}
	genOffset = []int64{-1000, -1, 0, 1, 1000}
	// Secrets (issue 15): names, headers and formats, the bad ones last.
	genSecretNames    = []string{"api-key", "deploy_key", "k", "a0"}
	genBadSecretNames = []string{"API", "", "a.b", "../k", "a/b"}
	genHeaders        = []string{"Authorization", "X-Api-Key", "cookie", "x-goog-api-key"}
	genBadHeaders     = []string{"Host", "Proxy-Authorization", "TE", "content-length", "X Key", "", "A:"}
	genFormats        = []string{"{}", "Bearer {}", "token={}&a=1", "Basic {} "}
	// The memory tools' arguments, the edges of each bound included; the
	// bad ones last.
	genTitles     = []string{"t", "Kyle's tea", strings.Repeat("a", 200)}
	genBadTitles  = []string{"", strings.Repeat("a", 201)}
	genTexts      = []string{"", "likes tea", "label: trusted", strings.Repeat("b", 16384)}
	genBadTexts   = []string{strings.Repeat("b", 16385)}
	genQueries    = []string{"tea", "kyle tea", strings.Repeat("q", 500)}
	genBadQueries = []string{"", strings.Repeat("q", 501)}
	genBadFormats = []string{"Bearer", "{}{}", "a\r\n{}", "\u00e9{}", ""}
)

func (x *xorshift) path() string {
	if x.oneIn(20) {
		return pick(x, genBadPaths)
	}
	if x.oneIn(15) {
		return "/"
	}
	n := 1 + x.intn(3)
	comps := make([]string, n)
	for i := range comps {
		comps[i] = pick(x, genComps)
	}
	return "/" + strings.Join(comps, "/")
}

// near is a request path close to the grants': one of their paths, or a
// component below it, so that matching is exercised and not only no_grant.
func (x *xorshift) near(grants []wire.Grant) string {
	var paths []string
	for _, g := range grants {
		paths = append(paths, g.Constraints.Paths...)
	}
	if len(paths) == 0 || x.oneIn(3) {
		return x.path()
	}
	p := pick(x, paths)
	if x.oneIn(3) {
		return p
	}
	if p == "/" {
		return "/" + pick(x, genComps)
	}
	return p + "/" + pick(x, genComps)
}

// nearURL is a URL whose host often matches one of the grants' patterns.
func (x *xorshift) nearURL(grants []wire.Grant) string {
	var hosts []string
	for _, g := range grants {
		hosts = append(hosts, g.Constraints.Hosts...)
	}
	if len(hosts) == 0 || x.oneIn(3) {
		return x.url()
	}
	h := pick(x, hosts)
	if len(h) > 2 && h[:2] == "*." {
		h = pick(x, []string{"", "www.", "a.b."}) + h[2:]
	}
	return "https://" + h + pick(x, []string{"", "/", "/p?q"})
}

func (x *xorshift) grantPath() string {
	if x.oneIn(200) {
		return pick(x, genBadPaths)
	}
	if x.oneIn(30) {
		return "/"
	}
	p := x.path()
	for p == "/" || !strings.HasPrefix(p, "/") || strings.Contains(p, "/.") || strings.Contains(p, "//") || strings.HasSuffix(p, "/") || strings.Contains(p, "\x00") {
		p = x.path()
	}
	return p
}

func (x *xorshift) hostPattern() string {
	switch {
	case x.oneIn(200):
		return pick(x, genBadHosts)
	case x.oneIn(3):
		return pick(x, genWildcards)
	}
	return pick(x, genHosts)
}

func (x *xorshift) url() string {
	if x.oneIn(10) {
		return pick(x, genBadURLs)
	}
	u := "https://" + pick(x, genHosts)
	if x.oneIn(5) {
		u += ":443"
	}
	return u + pick(x, []string{"", "/", "/x?y=1#z", "/~a/b.html"})
}

func (x *xorshift) list(n int, gen func() string) []string {
	var out []string
	for range n {
		out = append(out, gen())
	}
	return out
}

func (x *xorshift) grant() wire.Grant {
	g := wire.Grant{
		Tool: pick(x, genTools), Mode: pick(x, genModes), MaxTaint: pick(x, genClass),
		ResultClass: pick(x, genClass), Untrusted: x.oneIn(2),
	}
	if x.oneIn(200) {
		g.Tool = "exec"
	}
	if x.oneIn(2) {
		e := wire.Timestamp(int64(genNow) + pick(x, genOffset))
		g.Expires = &e
	}
	if x.oneIn(200) {
		s := "key"
		g.Secret = &s
	}
	if x.oneIn(200) {
		g.Constraints.Patterns = []string{"*.md"}
	}
	if x.oneIn(3) {
		j := pick(x, genJobs)
		if x.oneIn(100) {
			j = pick(x, genBadJobs)
		}
		g.Job = &j
	}
	c := &g.Constraints
	switch {
	case x.oneIn(100): // any mix, mostly breaking rule 6
		c.Paths = x.list(x.intn(2), x.grantPath)
		c.Hosts = x.list(x.intn(2), x.hostPattern)
	case g.Tool == "http_fetch":
		c.Hosts = x.list(1+x.intn(2), x.hostPattern)
	case g.Tool == "shell":
		c.Paths = x.list(x.intn(2)*(1+x.intn(2)), x.grantPath)
	case g.Tool == "remember" || g.Tool == "recall":
		// none
	default:
		c.Paths = x.list(1+x.intn(3), x.grantPath)
	}
	if (g.Tool == "shell" || g.Tool == "http_fetch") && x.oneIn(5) {
		x.secret(&g)
	}
	if g.Secret == nil && x.oneIn(300) { // a secret_* key alone
		v := "file"
		*pick(x, []**string{&g.SecretHeader, &g.SecretFormat, &g.SecretDeliver}) = &v
	}
	return g
}

// argsFor builds arguments for tool, usually well formed, sometimes broken
// in one way the parser must refuse.
func (x *xorshift) argsFor(tool string, grants []wire.Grant) genArgs {
	var ms []member
	str := func(name, v string) { ms = append(ms, member{name, 's', v}) }
	switch tool {
	case "read_file":
		str("path", x.near(grants))
	case "write_file":
		str("path", x.near(grants))
		str("content", pick(x, []string{"", "hello", "{\"path\":\"/\"}"}))
	case "shell":
		str("command", pick(x, []string{"ls", "", "rm -rf /"}))
		if x.oneIn(2) {
			str("cwd", x.near(grants))
		}
	case "remember":
		str("title", x.goodOrBad(genTitles, genBadTitles))
		str("text", x.goodOrBad(genTexts, genBadTexts))
		if x.oneIn(3) {
			str("id", x.noteID())
		}
	case "recall":
		if x.oneIn(2) {
			str("query", x.goodOrBad(genQueries, genBadQueries))
		} else {
			str("id", x.noteID())
		}
	default:
		str("url", x.nearURL(grants))
	}
	a := genArgs{}
	if x.oneIn(8) {
		switch x.intn(8) {
		case 0:
			ms = ms[1:] // drop the first member, which is always required
		case 1:
			ms = append(ms, member{"extra", 's', "x"})
		case 2:
			ms[0].name = strings.ToUpper(ms[0].name[:1]) + ms[0].name[1:]
		case 3:
			ms = append(ms, ms[0])
		case 4:
			ms[x.intn(len(ms))].kind = pick(x, []byte{'n', '0', 'b', '['})
		case 5:
			a.trailing = pick(x, []string{"x", "{}", " ", "\n\t"})
		case 6:
			a.notObject = pick(x, []string{"null", `"x"`, `[]`, "1", "", "{"})
		case 7:
			ms = append(ms, member{pick(x, []string{"path", "content", "command", "cwd", "url", "title", "text", "query", "id"}), 's', "/a"})
		}
	}
	for i := len(ms) - 1; i > 0; i-- { // member order must not matter
		j := x.intn(i + 1)
		ms[i], ms[j] = ms[j], ms[i]
	}
	a.members = ms
	return a
}

// goodOrBad is one of good, or now and then one of bad.
func (x *xorshift) goodOrBad(good, bad []string) string {
	if x.oneIn(15) {
		return pick(x, bad)
	}
	return pick(x, good)
}

// noteID is a note id, now and then not of the id form.
func (x *xorshift) noteID() string {
	return x.goodOrBad(genIDs, genBadIDs)
}

func (x *xorshift) genCase() genCase {
	c := genCase{grants: map[string]wire.Grant{}, unavailable: map[string]bool{}, now: genNow, taint: pick(x, genClass)}
	if x.oneIn(3) {
		c.scope = pick(x, genJobs)
	}
	for _, name := range genSecretNames {
		c.unavailable[name] = x.oneIn(3)
	}
	for range x.intn(7) {
		id := pick(x, genIDs)
		if x.oneIn(200) {
			id = pick(x, genBadIDs)
		}
		c.grants[id] = x.grant()
	}
	if x.oneIn(500) {
		c.taint = 0
	}
	if x.oneIn(3) {
		for range 1 + x.intn(2) {
			p := x.path()
			if !oraclePath(p) {
				continue
			}
			c.protected = append(c.protected, p)
			c.given = append(c.given, pick(x, []string{p, p + "/", p + "/.", "/." + p, p + "/a/..", "/c/.." + p}))
		}
	}
	// Mostly a tool some grant names, and arguments near that tool's grants.
	var all []wire.Grant
	for _, g := range c.grants {
		all = append(all, g)
	}
	c.tool = pick(x, genTools)
	if len(all) > 0 && !x.oneIn(4) {
		c.tool = pick(x, all).Tool
	}
	if x.oneIn(100) {
		c.tool = pick(x, []string{"exec", "Read_file", ""})
	}
	var same []wire.Grant
	for _, g := range all {
		if g.Tool == c.tool {
			same = append(same, g)
		}
	}
	c.args = x.argsFor(c.tool, same)
	if x.oneIn(50) {
		c.args = x.argsFor(pick(x, genTools), all) // arguments of another tool
	}
	return c
}

// tomlFile writes g as a grant file; every string is a TOML basic string
// with \uXXXX escapes, so any generated value round-trips.
func tomlFile(g wire.Grant) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool = %s\nmode = %s\nmax_taint = %s\nresult_class = %s\nuntrusted = %v\n",
		tomlString(g.Tool), tomlString(g.Mode.String()), tomlString(g.MaxTaint.String()), tomlString(g.ResultClass.String()), g.Untrusted)
	if g.Expires != nil {
		fmt.Fprintf(&b, "expires = %s\n", tomlString(g.Expires.String()))
	}
	if g.Job != nil {
		fmt.Fprintf(&b, "job = %s\n", tomlString(*g.Job))
	}
	for _, k := range []struct {
		key string
		v   *string
	}{{"secret", g.Secret}, {"secret_header", g.SecretHeader}, {"secret_format", g.SecretFormat}, {"secret_deliver", g.SecretDeliver}} {
		if k.v != nil {
			fmt.Fprintf(&b, "%s = %s\n", k.key, tomlString(*k.v))
		}
	}
	if g.SecretHosts != nil {
		fmt.Fprintf(&b, "secret_hosts = %s\n", tomlList(g.SecretHosts))
	}
	b.WriteString("\n[constraints]\n")
	for _, l := range []struct {
		key  string
		list []string
	}{{"paths", g.Constraints.Paths}, {"hosts", g.Constraints.Hosts}, {"patterns", g.Constraints.Patterns}} {
		if l.list == nil {
			continue
		}
		quoted := make([]string, len(l.list))
		for i, s := range l.list {
			quoted[i] = tomlString(s)
		}
		fmt.Fprintf(&b, "%s = [%s]\n", l.key, strings.Join(quoted, ", "))
	}
	return b.String()
}

func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == 0x7f {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
