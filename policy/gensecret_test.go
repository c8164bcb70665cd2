package policy_test

import (
	"strings"

	"boxmaker/wire"
)

// secret gives g a secret, usually as the loading rules want it for its
// tool, sometimes wrong in one way or more.
func (x *xorshift) secret(g *wire.Grant) {
	str := func(good, bad []string, badOne int) *string {
		v := pick(x, good)
		if x.oneIn(badOne) {
			v = pick(x, bad)
		}
		return &v
	}
	g.Secret = str(genSecretNames, genBadSecretNames, 40)
	if !x.oneIn(15) {
		g.ResultClass = wire.Secret
	}
	switch g.Tool {
	case "shell":
		if !x.oneIn(15) {
			g.SecretDeliver = str([]string{"file"}, []string{"env", "File", ""}, 15)
		}
		if x.oneIn(30) {
			g.SecretHeader = str(genHeaders, genBadHeaders, 2)
		}
		if x.oneIn(30) {
			g.SecretHosts = []string{"example.com"}
		}
	case "http_fetch":
		if !x.oneIn(15) {
			g.SecretHeader = str(genHeaders, genBadHeaders, 15)
		}
		if x.oneIn(2) {
			g.SecretFormat = str(genFormats, genBadFormats, 15)
		}
		if x.oneIn(30) {
			v := "file"
			g.SecretDeliver = &v
		}
		if x.oneIn(2) {
			// Some of the grant's hosts, what lies inside them, or (rarely)
			// a host outside them or none at all.
			g.SecretHosts = []string{}
			for _, h := range g.Constraints.Hosts {
				switch {
				case x.oneIn(3):
				case strings.HasPrefix(h, "*.") && x.oneIn(2):
					g.SecretHosts = append(g.SecretHosts, pick(x, []string{"www", "*.b", "a.b"})+h[1:])
				default:
					g.SecretHosts = append(g.SecretHosts, h)
				}
			}
			if x.oneIn(10) {
				g.SecretHosts = append(g.SecretHosts, x.hostPattern())
			}
		}
	}
}
