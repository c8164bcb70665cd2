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

// TestDecodeGrantJob: job (issue 17) decodes as written, absent is nil, a
// non-string is refused on its line, and a case variant is an unknown key.
// Its form (wire.ValidID) is policy's loading rule.
func TestDecodeGrantJob(t *testing.T) {
	base := "tool = \"remember\"\nmode = \"auto\"\nmax_taint = \"private\"\n"
	g, err := DecodeGrant([]byte(base + "job = \"daily-digest\"\n"))
	if err != nil || g.Job == nil || *g.Job != "daily-digest" {
		t.Fatalf("job: %+v %v", g.Job, err)
	}
	if g, err := DecodeGrant([]byte(base)); err != nil || g.Job != nil {
		t.Fatalf("no job: %+v %v", g.Job, err)
	}
	if g, err := DecodeGrant([]byte(base + "job = \"Not An ID\"\n")); err != nil || *g.Job != "Not An ID" {
		t.Fatalf("a job that is not an id decodes here (policy refuses it): %+v %v", g.Job, err)
	}
	for _, tc := range []struct {
		file string
		want GrantError
	}{
		{base + "job = 1\n", GrantError{Line: 4, Field: "job", Problem: "must be a string"}},
		{base + "Job = \"x\"\n", GrantError{Line: 4, Field: "Job", Problem: "unknown field"}},
	} {
		_, err := DecodeGrant([]byte(tc.file))
		ge, ok := err.(*GrantError)
		if !ok || *ge != tc.want {
			t.Errorf("%q: got %v, want %v", tc.file, err, &tc.want)
		}
	}
}
