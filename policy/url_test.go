package policy_test

import (
	"strings"
	"testing"

	"boxmaker/policy"
)

var longURL = "https://example.com/" + strings.Repeat("a", policy.MaxURLBytes-len("https://example.com/"))

// urlCases also seed FuzzURL; host "" means invalid.
var urlCases = []struct {
	url, host string
}{
	{"https://example.com", "example.com"},
	{"https://example.com/", "example.com"},
	{"https://example.com:443/a", "example.com"},
	{"https://example.com/a/b?q=1&r=%20#frag", "example.com"},
	{"https://www.example.com/~user/!$'()*+,;=:@[]", "www.example.com"},
	{longURL, "example.com"},
	{longURL + "a", ""},
	{"http://example.com/", ""},
	{"HTTPS://example.com/", ""},
	{"https:/example.com/", ""},
	{"https://", ""},
	{"https:///a", ""},
	{"https://Example.com/", ""},
	{"https://user@example.com/", ""},
	{"https://user:pw@example.com/", ""},
	{"https://example.com:8443/", ""},
	{"https://example.com:/", ""},
	{"https://example.com:0443/", ""},
	{"https://example.com:443:443/", ""},
	{"https://1.2.3.4/", ""},
	{"https://[::1]/", ""},
	{"https://localhost/", ""},
	{"https://example.com?q", ""},
	{"https://example.com#f", ""},
	{"https://example.com/a b", ""},
	{"https://example.com/a\tb", ""},
	{"https://example.com/a\x7f", ""},
	{"https://example.com/ä", ""},
	{"https://example.com\\@evil.com/", ""},
	{"https://example.com./", ""},
	{" https://example.com/", ""},
}

func TestParseURL(t *testing.T) {
	for _, tc := range urlCases {
		host, err := policy.ParseURL(tc.url)
		if tc.host == "" {
			if err == nil {
				t.Errorf("ParseURL(%q) accepted, host %q", tc.url, host)
			}
			continue
		}
		if err != nil || host != tc.host {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", tc.url, host, err, tc.host)
		}
	}
}
