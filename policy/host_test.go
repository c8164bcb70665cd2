package policy_test

import (
	"strings"
	"testing"

	"boxmaker/policy"
)

// TestHostsTable is every row of M3a §3's "Hosts" table, through Decide.
func TestHostsTable(t *testing.T) {
	for _, tc := range []struct{ grant, host, want string }{
		{"example.com", "example.com", "allowed"},
		{"example.com", "www.example.com", "no_grant"},
		{"*.example.com", "www.example.com", "allowed"},
		{"*.example.com", "a.b.example.com", "allowed"},
		{"*.example.com", "example.com", "no_grant"},
	} {
		dir := grantsDir(t, map[string]string{"g.toml": simple("http_fetch", `hosts = ["`+tc.grant+`"]`)})
		d := policy.Decide(dir, request("http_fetch", `{"url":"https://`+tc.host+`/x"}`), private, now)
		if got := outcomeName(d); got != tc.want {
			t.Errorf("grant %q, fetch %q: got %s, want %s", tc.grant, tc.host, got, tc.want)
		}
	}
}

// TestBothHostsListed: "list both to allow both".
func TestBothHostsListed(t *testing.T) {
	dir := grantsDir(t, map[string]string{"g.toml": simple("http_fetch", `hosts = ["example.com", "*.example.com"]`)})
	for _, h := range []string{"example.com", "www.example.com"} {
		d := policy.Decide(dir, request("http_fetch", `{"url":"https://`+h+`"}`), private, now)
		if got := outcomeName(d); got != "allowed" {
			t.Errorf("%s: got %s", h, got)
		}
	}
}

var (
	label63 = strings.Repeat("a", 63)
	long253 = strings.Repeat(label63+".", 3) + strings.Repeat("b", 61)
)

// hostCases also seed FuzzHost.
var hostCases = []struct {
	host string
	ok   bool
}{
	{"example.com", true},
	{"a.b", true},
	{"x-1.example.com", true},
	{"0a.example.com", true},
	{label63 + ".com", true},
	{long253, true},
	{long253 + "b", false}, // 254 bytes
	{strings.Repeat("a", 64) + ".com", false},
	{"", false},
	{"com", false},
	{"Example.com", false},
	{"example..com", false},
	{".example.com", false},
	{"example.com.", false},
	{"-a.example.com", false},
	{"a-.example.com", false},
	{"a_b.example.com", false},
	{"*.example.com", false},
	{"1.2.3.4", false},
	{"127.1", false},
	{"a.0x7f", false},
	{"a.0x", false},
	{"a.0xg", true},
	{"a.1a", true},
	{"[::1]", false},
	{"exämple.com", false},
}

func TestValidHost(t *testing.T) {
	for _, tc := range hostCases {
		if got := policy.ValidHost(tc.host); got != tc.ok {
			t.Errorf("ValidHost(%q) = %v, want %v", tc.host, got, tc.ok)
		}
	}
}

func TestValidHostPattern(t *testing.T) {
	for _, tc := range []struct {
		p  string
		ok bool
	}{
		{"example.com", true},
		{"*.example.com", true},
		{"*.com", false},
		{"*", false},
		{"*.", false},
		{"**.example.com", false},
		{"a.*.example.com", false},
		{"*example.com", false},
		{"*.*.example.com", false},
	} {
		if got := policy.ValidHostPattern(tc.p); got != tc.ok {
			t.Errorf("ValidHostPattern(%q) = %v, want %v", tc.p, got, tc.ok)
		}
	}
}

func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "www.example.com", false},
		{"*.example.com", "www.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
		{"*.example.com", "www.example.org", false},
		{"example.com", "Example.com", false},
	} {
		if got := policy.HostMatches(tc.pattern, tc.host); got != tc.want {
			t.Errorf("HostMatches(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}
