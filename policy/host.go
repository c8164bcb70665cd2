package policy

import (
	"errors"
	"strings"
)

// CheckHost says why h is not a valid host name, or returns nil: 1 to 253
// bytes, at least two labels, each 1 to 63 bytes of [a-z0-9-] not starting
// or ending with '-' (M3a §3, "Hosts").
//
// A name whose last label is all digits, or 0x and hex digits, is refused
// too: URL parsers read such a name as an IPv4 address (127.1, 1.2.3.4,
// a.0x7f), and the spec allows no IP literals. No top-level domain has that
// form, so no real name is lost.
func CheckHost(h string) error {
	if h == "" || len(h) > 253 {
		return errors.New("must be 1 to 253 bytes")
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return errors.New("needs at least two labels")
	}
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return err
		}
	}
	if looksNumeric(labels[len(labels)-1]) {
		return errors.New("is an IP address, not a host name")
	}
	return nil
}

func checkLabel(l string) error {
	if l == "" || len(l) > 63 {
		return errors.New("has a label that is not 1 to 63 bytes")
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return errors.New("has a byte outside [a-z0-9-]")
		}
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return errors.New("has a label starting or ending with -")
	}
	return nil
}

// looksNumeric reports whether a final label would make a URL parser treat
// the whole host as an IPv4 address (WHATWG URL, "ends in a number").
func looksNumeric(l string) bool {
	digits := func(s string, hex bool) bool {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= '0' && c <= '9' || hex && c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		return digits(rest, true)
	}
	return digits(l, false)
}

// ValidHost reports whether h is a valid host name.
func ValidHost(h string) bool { return CheckHost(h) == nil }

// CheckHostPattern says why p is not a valid grant host pattern: a host name,
// or "*." followed by a host name.
func CheckHostPattern(p string) error {
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		return CheckHost(rest)
	}
	return CheckHost(p)
}

// ValidHostPattern reports whether p is a valid grant host pattern.
func ValidHostPattern(p string) bool { return CheckHostPattern(p) == nil }

// HostMatches reports whether host matches pattern. "example.com" matches only
// itself; "*.example.com" matches any name with at least one more label and
// never example.com itself (list both to allow both). Invalid input never
// matches.
func HostMatches(pattern, host string) bool {
	return ValidHostPattern(pattern) && ValidHost(host) && hostMatches(pattern, host)
}

// hostMatches is HostMatches for names already checked.
func hostMatches(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		// suffix is ".example.com"; host must have a non-empty label before it.
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
	}
	return pattern == host
}
