package wire

import (
	"reflect"
	"testing"
)

// TestDecodeGrantSecretKeys: the secret_* keys decode into their fields as
// written, absent ones stay nil (an empty secret_hosts list is not nil,
// so policy can refuse it), and a grant without them is unchanged.
func TestDecodeGrantSecretKeys(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name, file string
		want       Grant
	}{
		{"http_fetch with every key", "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n" +
			"secret = \"api-key\"\nsecret_header = \"Authorization\"\nsecret_format = \"Bearer {}\"\nsecret_hosts = [\"api.example.com\"]\n" +
			"[constraints]\nhosts = [\"*.example.com\"]\n",
			Grant{Tool: "http_fetch", Mode: Auto, MaxTaint: Secret, ResultClass: Secret, Untrusted: true, Secret: s("api-key"),
				SecretHeader: s("Authorization"), SecretFormat: s("Bearer {}"), SecretHosts: []string{"api.example.com"},
				Constraints: Constraints{Hosts: []string{"*.example.com"}}}},
		{"shell with a file", "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\nsecret = \"k\"\nsecret_deliver = \"file\"\n",
			Grant{Tool: "shell", Mode: Ask, MaxTaint: Private, ResultClass: Private, Untrusted: true, Secret: s("k"), SecretDeliver: s("file")}},
		{"empty secret_hosts", "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\nsecret_hosts = []\n",
			Grant{Tool: "http_fetch", Mode: Ask, MaxTaint: Private, ResultClass: Private, Untrusted: true, SecretHosts: []string{}}},
		{"no secret keys", "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"private\"\n",
			Grant{Tool: "shell", Mode: Ask, MaxTaint: Private, ResultClass: Private, Untrusted: true}},
	} {
		g, err := DecodeGrant([]byte(tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(g, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, g, tc.want)
		}
	}
}

// TestGrantKeyLineSecretKeys: "secret" is not found on a secret_* line,
// and each secret_* key is found on its own.
func TestGrantKeyLineSecretKeys(t *testing.T) {
	data := []byte("tool = \"http_fetch\"\nsecret_header = \"A\"\nsecret = \"k\"\nsecret_hosts = [\n  \"a.com\",\n]\n")
	for key, want := range map[string]uint64{"secret": 3, "secret_header": 2, "secret_hosts": 4, "secret_format": 0} {
		if got := GrantKeyLine(data, key); got != want {
			t.Errorf("GrantKeyLine(%q) = %d, want %d", key, got, want)
		}
	}
}
