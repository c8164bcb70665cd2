package policy

import (
	"errors"
	"strings"
)

// MaxURLBytes is the longest valid http_fetch URL (M3a §3).
const MaxURLBytes = 2048

// ParseURL checks u against the spec's URL form and returns its host:
// "https://", a host name (CheckHost), no userinfo, no port or exactly 443,
// then nothing or "/" followed by printable ASCII other than space.
//
// It is written out rather than built on net/url, which accepts much that
// this must refuse (userinfo, uppercase, IP literals, spaces, other ports).
func ParseURL(u string) (host string, err error) {
	if len(u) > MaxURLBytes {
		return "", errors.New("is longer than 2048 bytes")
	}
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		return "", errors.New("does not start with https://")
	}
	// The authority runs to the first '/'. A '?' or '#' before it is not
	// allowed: the rule is host[:443], then nothing or '/'.
	authority, path, _ := strings.Cut(rest, "/")
	if strings.IndexByte(authority, '@') >= 0 {
		return "", errors.New("has userinfo")
	}
	host = authority
	if h, port, hasPort := strings.Cut(authority, ":"); hasPort {
		if port != "443" {
			return "", errors.New("has a port other than 443")
		}
		host = h
	}
	if err := CheckHost(host); err != nil {
		return "", errors.New("host " + err.Error())
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c <= ' ' || c > '~' {
			return "", errors.New("has a byte after the host that is not printable ASCII other than space")
		}
	}
	return host, nil
}

// ValidURL reports whether u is a valid http_fetch URL.
func ValidURL(u string) bool {
	_, err := ParseURL(u)
	return err == nil
}
