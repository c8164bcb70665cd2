package egress

import (
	"bytes"
	"fmt"
	"io"
	"net/textproto"
	"slices"
	"strings"

	"boxmaker/policy"
)

// Secret is what one call's proxy puts into requests to the hosts it covers.
type Secret struct {
	Name        string   // for messages only
	Header      string   // the request header that carries it, as the grant names it
	Placeholder string   // the random per-call string the container holds instead of the value
	Value       []byte   // the real value; never logged, never in an error
	Hosts       []string // host patterns (policy.HostMatches) where the value may go; a subset of the proxy's hosts
}

// String, GoString and Format print the secret's name and nothing else, so
// that no log line, error or %#v of a struct holding a Secret shows the
// value or the placeholder. fmt cannot call them on a Secret held in an
// unexported field of another struct: hold a *Secret there, which fmt
// prints as an address.
func (s Secret) String() string { return "secret " + s.Name }

// GoString is String: %#v must not show the value either.
func (s Secret) GoString() string { return s.String() }

// Format prints String for every verb.
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// secret is the proxy's own copy of a Secret, checked. Value and
// placeholder are only ever compared and copied into requests and
// responses; no message is built from them.
type secret struct {
	name        string
	header      string // canonical, as net/http's parsed headers have it
	placeholder string
	value       []byte
	hosts       []string
	// What every response's status line and headers need, made once: the
	// value as text, and lowered.
	text, lowerText string
}

// newSecret checks s against the proxy's hosts and copies it. Its errors
// name the secret and never show the value or the placeholder.
func newSecret(s *Secret, hosts []string) (*secret, error) {
	bad := func(why string) error { return fmt.Errorf("egress: secret %q: %s", s.Name, why) }
	// The grant's own rule, checked again: the proxy trusts no caller.
	if err := policy.CheckSecretHeader(s.Header); err != nil {
		return nil, bad("the header name " + err.Error())
	}
	if len(s.Value) == 0 {
		return nil, bad("the value is empty")
	}
	if policy.BadHeaderByte(s.Value) >= 0 {
		return nil, bad("the value has a byte an HTTP header cannot carry (a control character or a line break)")
	}
	if len(s.Placeholder) < minPlaceholder || !validPlaceholder(s.Placeholder) {
		return nil, fmt.Errorf("egress: secret %q: the placeholder must be at least %d printable ASCII characters without spaces", s.Name, minPlaceholder)
	}
	// The container holds the placeholder: one that contains the value
	// hands the value to the container.
	if strings.Contains(s.Placeholder, string(s.Value)) {
		return nil, bad("the placeholder contains the value")
	}
	if len(s.Hosts) == 0 {
		return nil, bad("no hosts to send the value to")
	}
	for _, h := range s.Hosts {
		if err := policy.CheckHostPattern(h); err != nil {
			return nil, fmt.Errorf("egress: secret %q: host %q is not a valid host pattern: it %v", s.Name, h, err)
		}
		if !policy.HostsCover(hosts, h) {
			return nil, fmt.Errorf("egress: secret %q: host %q is not among the proxy's hosts (%s)", s.Name, h, strings.Join(hosts, ", "))
		}
	}
	return &secret{
		name:        s.Name,
		header:      textproto.CanonicalMIMEHeaderKey(s.Header),
		placeholder: s.Placeholder,
		value:       bytes.Clone(s.Value),
		hosts:       slices.Clone(s.Hosts),
		text:        string(s.Value),
		lowerText:   strings.ToLower(string(s.Value)),
	}, nil
}

// minPlaceholder keeps a placeholder from being a string that turns up in
// ordinary traffic by chance; the runtime's are random and much longer.
const minPlaceholder = 16

// covers reports whether host gets the value: TLS to it is terminated.
func (s *secret) covers(host string) bool {
	return slices.ContainsFunc(s.hosts, func(pat string) bool { return policy.HostMatches(pat, host) })
}

// scrub replaces the value in a message by the secret's name, for texts
// that quote what an upstream sent (a header line, a certificate name).
func (s *secret) scrub(msg string) string {
	return strings.ReplaceAll(msg, string(s.value), "[secret:"+s.name+"]")
}

// validPlaceholder: printable ASCII, no space: it travels in environment
// variables, shell words and header values unchanged.
func validPlaceholder(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] <= 0x20 || p[i] >= 0x7f {
			return false
		}
	}
	return true
}
