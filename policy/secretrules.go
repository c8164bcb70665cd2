package policy

import (
	"fmt"
	"strings"

	"boxmaker/wire"
)

// Loading rule 4, as issue 15 rewrites it (M3a §3 had "secrets are not
// supported until M4"): a grant may name one secret, for shell or
// http_fetch only, and says how the secret reaches the tool.
//
//   - http_fetch: in one request header (secret_header, required), written
//     as secret_format ("{}" stands for the value; default "{}"), and only
//     to the hosts of secret_hosts (default: all of the grant's hosts),
//     each of which the grant's hosts cover. The egress proxy puts it
//     there; the container holds a placeholder.
//   - shell: a shell grant takes no hosts, so a shell has no network and
//     the value can reach it only as a file: secret_deliver = "file" is
//     required, and the header keys are refused.
//
// Either way the grant must say result_class = "secret": the tool's output
// may hold the value in a form no redaction finds.

// secretKeys are the keys only a grant with a secret takes, in file order.
var secretKeys = []string{"secret_header", "secret_format", "secret_hosts", "secret_deliver"}

// DefaultSecretFormat is the header value when a grant gives no
// secret_format: the value alone.
const DefaultSecretFormat = "{}"

// transportHeaders are the header names (lowercase) that the connection
// itself owns: framing, hop-by-hop and proxy headers. A secret in one of
// them would change how the request is carried, or be dropped or read by
// a proxy on the way; "proxy-" covers every Proxy-* header.
var transportHeaders = []string{"host", "content-length", "transfer-encoding", "connection", "upgrade", "te",
	"trailer", "keep-alive", "expect", "http2-settings", "proxy-"}

// secretPresence lists which of secretKeys g has, by field.
func secretPresence(g wire.Grant) []bool {
	return []bool{g.SecretHeader != nil, g.SecretFormat != nil, g.SecretHosts != nil, g.SecretDeliver != nil}
}

// checkSecret adds the problems of rule 4 to add. tool is known.
func checkSecret(data []byte, g wire.Grant, tool Tool, known bool, add func(line uint64, field, format string, args ...any)) {
	present := secretPresence(g)
	if g.Secret == nil {
		for i, k := range secretKeys {
			if present[i] {
				add(keyLine(data, k), k, "only a grant with a secret takes %s", k)
			}
		}
		return
	}
	secretLine := keyLine(data, "secret")
	name := *g.Secret
	if !ValidSecretName(name) {
		add(secretLine, "secret", "%q is not a valid secret name (1 to 64 characters of [a-z0-9_-])", name)
	}
	if !known {
		return // rule 3 has said what is wrong
	}
	if tool != Shell && tool != HTTPFetch {
		add(secretLine, "secret", "%s cannot be given a secret; only shell and http_fetch can", tool)
		return
	}
	if g.ResultClass != wire.Secret {
		line := keyLine(data, "result_class")
		if line == 0 {
			line = secretLine
		}
		was := fmt.Sprintf("not %q", g.ResultClass)
		if g.ResultClass == wire.Private {
			was = `not "private" (what leaving it out means)`
		}
		add(line, "result_class", `a grant with a secret must say result_class = "secret", %s: the tool's output may hold the secret in a form no redaction finds`, was)
	}
	if tool == Shell {
		checkShellSecret(data, g, present, secretLine, add)
		return
	}
	checkFetchSecret(data, g, secretLine, add)
}

func checkShellSecret(data []byte, g wire.Grant, present []bool, secretLine uint64, add func(line uint64, field, format string, args ...any)) {
	for i, k := range secretKeys[:3] {
		if present[i] {
			add(keyLine(data, k), k, `shell takes no %s: a shell call has no network, so its secret reaches it only as a file (secret_deliver = "file")`, k)
		}
	}
	switch {
	case g.SecretDeliver == nil:
		add(secretLine, "secret_deliver", `a shell grant with a secret must say secret_deliver = "file": a shell call has no network, so the secret reaches it only as a file`)
	case *g.SecretDeliver != "file":
		add(keyLine(data, "secret_deliver"), "secret_deliver", `%q is not a delivery; the only one is "file"`, *g.SecretDeliver)
	}
}

func checkFetchSecret(data []byte, g wire.Grant, secretLine uint64, add func(line uint64, field, format string, args ...any)) {
	if g.SecretDeliver != nil {
		add(keyLine(data, "secret_deliver"), "secret_deliver",
			"http_fetch takes no secret_deliver: its secret goes only into secret_header, put there by the egress proxy")
	}
	if g.SecretHeader == nil {
		add(secretLine, "secret_header", `http_fetch with a secret requires secret_header, the request header the secret goes in (for example "Authorization")`)
	} else if err := CheckSecretHeader(*g.SecretHeader); err != nil {
		add(keyLine(data, "secret_header"), "secret_header", "%q %v", *g.SecretHeader, err)
	}
	if g.SecretFormat != nil {
		if err := CheckSecretFormat(*g.SecretFormat); err != nil {
			add(keyLine(data, "secret_format"), "secret_format", "%q %v", *g.SecretFormat, err)
		}
	}
	if g.SecretHosts == nil {
		return
	}
	if len(g.SecretHosts) == 0 {
		add(keyLine(data, "secret_hosts"), "secret_hosts", "names no host; leave it out to send the secret to every host of constraints.hosts")
	}
	for _, h := range g.SecretHosts {
		if err := CheckHostPattern(h); err != nil {
			add(itemLine(data, "secret_hosts", h), "secret_hosts", "%q is not a valid host pattern: it %v", h, err)
		} else if !HostsCover(g.Constraints.Hosts, h) {
			add(itemLine(data, "secret_hosts", h), "secret_hosts", "%q is not covered by constraints.hosts: the secret may go only to hosts the grant allows", h)
		}
	}
}

// HostsCover reports whether the patterns cover every host pattern p
// matches: a host name must be matched by one of them; a wildcard must be
// one of them, or lie inside a wildcard among them ("*.a.example.com"
// inside "*.example.com").
func HostsCover(patterns []string, p string) bool {
	for _, q := range patterns {
		if !ValidHostPattern(q) {
			continue // rule 8 reports it
		}
		if rest, wild := strings.CutPrefix(p, "*."); wild {
			if q == p || strings.HasPrefix(q, "*.") && hostMatches(q, rest) {
				return true
			}
		} else if hostMatches(q, p) {
			return true
		}
	}
	return false
}

// CheckSecretHeader says why name cannot carry a secret, or returns nil: it
// must be an HTTP field name (an RFC 9110 token) and not one the
// connection itself owns (transportHeaders).
func CheckSecretHeader(name string) error {
	if name == "" {
		return fmt.Errorf("is not an HTTP header name: it is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTchar(name[i]) {
			return fmt.Errorf("is not an HTTP header name: byte %d is not a token character", i)
		}
	}
	lower := strings.ToLower(name)
	for _, t := range transportHeaders {
		if lower == t || strings.HasSuffix(t, "-") && strings.HasPrefix(lower, t) {
			return fmt.Errorf("is a header the connection itself uses (framing, hop-by-hop or proxy); name the header the service reads the secret from")
		}
	}
	return nil
}

// isTchar is RFC 9110's tchar.
func isTchar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// CheckSecretFormat says why f cannot be a secret header's value, or
// returns nil: "{}" exactly once, and besides it only printable ASCII
// (space to '~'), so no line break can end the header.
func CheckSecretFormat(f string) error {
	if n := strings.Count(f, "{}"); n != 1 {
		return fmt.Errorf(`must hold "{}", where the secret goes, exactly once (it holds it %d times)`, n)
	}
	for i := 0; i < len(f); i++ {
		if f[i] < 0x20 || f[i] > 0x7e {
			return fmt.Errorf("must be printable ASCII: byte %d is 0x%02x", i, f[i])
		}
	}
	return nil
}
