package egress

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const (
	testValue       = "sk-live-Zq8pV3xT9wLm2cRf"
	testPlaceholder = "BOXMAKER-PLACEHOLDER-4f1d0c9a7b3e"
)

func testSecret(hosts ...string) *Secret {
	return &Secret{Name: "api-key", Header: "authorization", Placeholder: testPlaceholder, Value: []byte(testValue), Hosts: hosts}
}

// TestSecretNeverPrints: every verb of fmt, on a Secret, a *Secret, a
// struct holding one, and the Proxy that holds its copy, shows the name at
// most: neither the value nor the placeholder.
func TestSecretNeverPrints(t *testing.T) {
	s := testSecret("api.example.com")
	p, err := StartWith(t.TempDir(), []string{"*.example.com"}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	holder := struct{ S Secret }{*s}
	for _, v := range []any{*s, s, holder, &holder, p} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			got := fmt.Sprintf(verb, v)
			if strings.Contains(got, testValue) || strings.Contains(got, testPlaceholder) ||
				strings.Contains(got, fmt.Sprintf("%x", testValue)) || strings.Contains(got, fmt.Sprint([]byte(testValue))) {
				t.Errorf("%s of %T shows the secret: %s", verb, v, got)
			}
		}
	}
	if got := fmt.Sprint(*s); got != "secret api-key" {
		t.Errorf("a Secret prints as %q", got)
	}
	if got := fmt.Sprintf("%#v", p); got != "egress proxy "+p.Path() {
		t.Errorf("a Proxy prints as %q", got)
	}
}

func TestStartWithChecksTheSecret(t *testing.T) {
	hosts := []string{"*.example.com", "api.example.org"}
	for _, tc := range []struct {
		name string
		edit func(s *Secret)
		want string // "" for accepted
	}{
		{"a subset", func(s *Secret) {}, ""},
		{"the same wildcard", func(s *Secret) { s.Hosts = []string{"*.example.com"} }, ""},
		{"a narrower wildcard", func(s *Secret) { s.Hosts = []string{"*.v1.example.com", "api.example.org"} }, ""},
		{"a wider wildcard", func(s *Secret) { s.Hosts = []string{"*.example.org"} }, `host "*.example.org" is not among the proxy's hosts (*.example.com, api.example.org)`},
		{"the wildcard's base", func(s *Secret) { s.Hosts = []string{"example.com"} }, `host "example.com" is not among`},
		{"another host", func(s *Secret) { s.Hosts = []string{"evil.example.net"} }, `host "evil.example.net" is not among`},
		{"a wildcard over an exact name", func(s *Secret) { s.Hosts = []string{"*.api.example.org"} }, "is not among"},
		{"no hosts", func(s *Secret) { s.Hosts = nil }, "no hosts"},
		{"an invalid pattern", func(s *Secret) { s.Hosts = []string{"API.example.com"} }, "not a valid host pattern"},
		{"no header", func(s *Secret) { s.Header = "" }, "the header name is not an HTTP header name: it is empty"},
		{"a header with a colon", func(s *Secret) { s.Header = "X-Key:" }, "the header name is not an HTTP header name: byte 5"},
		{"a header the connection owns", func(s *Secret) { s.Header = "Content-Length" }, "the header name is a header the connection itself uses"},
		{"an empty value", func(s *Secret) { s.Value = nil }, "the value is empty"},
		{"a line break in the value", func(s *Secret) { s.Value = []byte(testValue + "\r\nX-Other: 1") }, "a byte an HTTP header cannot carry"},
		{"a NUL in the value", func(s *Secret) { s.Value = []byte(testValue + "\x00") }, "a byte an HTTP header cannot carry"},
		{"a short placeholder", func(s *Secret) { s.Placeholder = "short" }, "at least 16 printable"},
		{"a placeholder with a space", func(s *Secret) { s.Placeholder = "BOXMAKER PLACEHOLDER 123" }, "without spaces"},
		{"a placeholder that holds the value", func(s *Secret) { s.Placeholder = "X" + testValue }, "the placeholder contains the value"},
	} {
		s := testSecret("api.example.com", "*.example.com", "api.example.org")
		tc.edit(s)
		p, err := StartWith(t.TempDir(), hosts, s)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			p.Close()
			continue
		}
		if err == nil {
			p.Close()
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, `egress: secret "api-key": `) ||
			strings.Contains(msg, testValue) || (tc.name != "a placeholder that holds the value" && strings.Contains(msg, s.Placeholder)) {
			t.Errorf("%s: %q, want %q and no value", tc.name, msg, tc.want)
		}
	}
	// Nothing is left behind by a refused secret.
	dir := t.TempDir()
	if _, err := StartWith(dir, hosts, &Secret{Name: "x", Header: "X-Key"}); err == nil {
		t.Fatal("an empty secret was accepted")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused secret left %v", entries)
	}
	// Without a secret: no CA, no file.
	p, err := StartWith(dir, hosts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.CAPath() != "" || p.ca != nil {
		t.Errorf("no secret, yet CAPath %q", p.CAPath())
	}
}

// TestRefusalsNeverHoldTheValue: a refusal that quotes what a host sent
// (a certificate's names, an error) has the value replaced by the name.
func TestRefusalsNeverHoldTheValue(t *testing.T) {
	p, err := StartWith(t.TempDir(), []string{"api.example.com"}, testSecret("api.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := p.refuse("x509: certificate is valid for %s, not api.example.com", testValue)
	if got != "x509: certificate is valid for [secret:api-key], not api.example.com" || p.Refusals()[0] != got {
		t.Errorf("refusal %q, recorded %q", got, p.Refusals())
	}
	p.Close()
	if strings.Trim(string(p.secret.value), "\x00") != "" {
		t.Error("Close left the proxy's copy of the value")
	}
}
