package policy_test

import (
	"strings"
	"testing"

	"boxmaker/policy"
)

// Grant files for the secret rules (issue 15): fetchHead and shellHead
// are valid up to the secret keys.
const (
	fetchHead = "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"api-key\"\n"
	shellHead = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"deploy_key\"\n"
	apiHosts  = "[constraints]\nhosts = [\"api.example.com\"]\n"
	wildHosts = "[constraints]\nhosts = [\"*.example.com\", \"example.org\"]\n"
)

// TestSecretGrantRules is the grant table: each file is accepted (no
// problems) or refused with exactly these problems, as bxctl prints them.
func TestSecretGrantRules(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name, file string
		want       []string // nil: accepted
	}{
		// Accepted.
		{"fetch, header only", fetchHead + "secret_header = \"Authorization\"\n" + apiHosts, nil},
		{"fetch, every key", fetchHead + "secret_header = \"Authorization\"\nsecret_format = \"Bearer {}\"\nsecret_hosts = [\"api.example.com\", \"*.a.example.com\", \"*.example.com\"]\n" + wildHosts, nil},
		{"fetch, odd but valid header and format", fetchHead + "secret_header = \"x-goog-api-key!#$%&'*+.^_`|~\"\nsecret_format = \"token={}&x=1 ; \\\"q\\\"\"\n" + apiHosts, nil},
		{"fetch, ask", strings.Replace(fetchHead, "auto", "ask", 1) + "secret_header = \"Cookie\"\nsecret_format = \"session={}\"\n" + apiHosts, nil},
		{"shell, file", shellHead + "secret_deliver = \"file\"\n", nil},
		{"shell, file and paths", shellHead + "secret_deliver = \"file\"\n[constraints]\npaths = [\"/home/kyle/scratch\"]\n", nil},
		{"longest name", strings.Replace(shellHead, "deploy_key", long, 1) + "secret_deliver = \"file\"\n", nil},
		{"name of every kind of byte", strings.Replace(shellHead, "deploy_key", "a-b_0", 1) + "secret_deliver = \"file\"\n", nil},

		// The tool.
		{"read_file", "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"k\"\n[constraints]\npaths = [\"/a\"]\n",
			[]string{`g.toml:5: secret: read_file cannot be given a secret; only shell and http_fetch can`}},
		{"write_file", "tool = \"write_file\"\nmode = \"ask\"\nmax_taint = \"secret\"\nsecret = \"k\"\nresult_class = \"secret\"\n[constraints]\npaths = [\"/a\"]\n",
			[]string{`g.toml:4: secret: write_file cannot be given a secret; only shell and http_fetch can`}},

		// The class.
		{"class left out", strings.Replace(shellHead, "result_class = \"secret\"\n", "", 1) + "secret_deliver = \"file\"\n",
			[]string{`g.toml:4: result_class: a grant with a secret must say result_class = "secret", not "private" (what leaving it out means): the tool's output may hold the secret in a form no redaction finds`}},
		{"class private", strings.Replace(shellHead, `result_class = "secret"`, `result_class = "private"`, 1) + "secret_deliver = \"file\"\n",
			[]string{`g.toml:4: result_class: a grant with a secret must say result_class = "secret", not "private" (what leaving it out means): the tool's output may hold the secret in a form no redaction finds`}},
		{"class public", strings.Replace(fetchHead, `result_class = "secret"`, `result_class = "public"`, 1) + "secret_header = \"Authorization\"\n" + apiHosts,
			[]string{`g.toml:4: result_class: a grant with a secret must say result_class = "secret", not "public": the tool's output may hold the secret in a form no redaction finds`}},

		// The name.
		{"name uppercase", strings.Replace(shellHead, "deploy_key", "API_KEY", 1) + "secret_deliver = \"file\"\n",
			[]string{`g.toml:5: secret: "API_KEY" is not a valid secret name (1 to 64 characters of [a-z0-9_-])`}},
		{"name empty", strings.Replace(shellHead, "deploy_key", "", 1) + "secret_deliver = \"file\"\n",
			[]string{`g.toml:5: secret: "" is not a valid secret name (1 to 64 characters of [a-z0-9_-])`}},
		{"name with a dot", strings.Replace(shellHead, "deploy_key", "..", 1) + "secret_deliver = \"file\"\n",
			[]string{`g.toml:5: secret: ".." is not a valid secret name (1 to 64 characters of [a-z0-9_-])`}},
		{"name with a slash", strings.Replace(shellHead, "deploy_key", "a/b", 1) + "secret_deliver = \"file\"\n",
			[]string{`g.toml:5: secret: "a/b" is not a valid secret name (1 to 64 characters of [a-z0-9_-])`}},
		{"name too long", strings.Replace(shellHead, "deploy_key", long+"a", 1) + "secret_deliver = \"file\"\n",
			[]string{`g.toml:5: secret: "` + long + `a" is not a valid secret name (1 to 64 characters of [a-z0-9_-])`}},

		// secret_* without a secret.
		{"keys without a secret", "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nsecret_header = \"A\"\nsecret_format = \"{}\"\nsecret_hosts = [\"a.com\"]\nsecret_deliver = \"file\"\n[constraints]\nhosts = [\"a.com\"]\n",
			[]string{"g.toml:4: secret_header: only a grant with a secret takes secret_header", "g.toml:5: secret_format: only a grant with a secret takes secret_format",
				"g.toml:6: secret_hosts: only a grant with a secret takes secret_hosts", "g.toml:7: secret_deliver: only a grant with a secret takes secret_deliver"}},

		// shell.
		{"shell without a delivery", shellHead,
			[]string{`g.toml:5: secret_deliver: a shell grant with a secret must say secret_deliver = "file": a shell call has no network, so the secret reaches it only as a file`}},
		{"shell, delivery env", shellHead + "secret_deliver = \"env\"\n",
			[]string{`g.toml:6: secret_deliver: "env" is not a delivery; the only one is "file"`}},
		{"shell, header keys", shellHead + "secret_deliver = \"file\"\nsecret_header = \"A\"\nsecret_format = \"{}\"\nsecret_hosts = [\"a.com\"]\n",
			[]string{`g.toml:7: secret_header: shell takes no secret_header: a shell call has no network, so its secret reaches it only as a file (secret_deliver = "file")`,
				`g.toml:8: secret_format: shell takes no secret_format: a shell call has no network, so its secret reaches it only as a file (secret_deliver = "file")`,
				`g.toml:9: secret_hosts: shell takes no secret_hosts: a shell call has no network, so its secret reaches it only as a file (secret_deliver = "file")`}},

		// http_fetch: the header.
		{"fetch without a header", fetchHead + apiHosts,
			[]string{`g.toml:5: secret_header: http_fetch with a secret requires secret_header, the request header the secret goes in (for example "Authorization")`}},
		{"fetch with a file", fetchHead + "secret_header = \"A\"\nsecret_deliver = \"file\"\n" + apiHosts,
			[]string{`g.toml:7: secret_deliver: http_fetch takes no secret_deliver: its secret goes only into secret_header, put there by the egress proxy`}},
		{"header Host", fetchHead + "secret_header = \"Host\"\n" + apiHosts, []string{transport("Host")}},
		{"header content-length", fetchHead + "secret_header = \"content-length\"\n" + apiHosts, []string{transport("content-length")}},
		{"header Transfer-Encoding", fetchHead + "secret_header = \"Transfer-Encoding\"\n" + apiHosts, []string{transport("Transfer-Encoding")}},
		{"header Connection", fetchHead + "secret_header = \"Connection\"\n" + apiHosts, []string{transport("Connection")}},
		{"header TE", fetchHead + "secret_header = \"TE\"\n" + apiHosts, []string{transport("TE")}},
		{"header Keep-Alive", fetchHead + "secret_header = \"Keep-Alive\"\n" + apiHosts, []string{transport("Keep-Alive")}},
		{"header Upgrade", fetchHead + "secret_header = \"Upgrade\"\n" + apiHosts, []string{transport("Upgrade")}},
		{"header Trailer", fetchHead + "secret_header = \"Trailer\"\n" + apiHosts, []string{transport("Trailer")}},
		{"header Proxy-Authorization", fetchHead + "secret_header = \"Proxy-Authorization\"\n" + apiHosts, []string{transport("Proxy-Authorization")}},
		{"header with a colon", fetchHead + "secret_header = \"Authorization:\"\n" + apiHosts,
			[]string{`g.toml:6: secret_header: "Authorization:" is not an HTTP header name: byte 13 is not a token character`}},
		{"header with a space", fetchHead + "secret_header = \"X Key\"\n" + apiHosts,
			[]string{`g.toml:6: secret_header: "X Key" is not an HTTP header name: byte 1 is not a token character`}},
		{"header empty", fetchHead + "secret_header = \"\"\n" + apiHosts,
			[]string{`g.toml:6: secret_header: "" is not an HTTP header name: it is empty`}},

		// http_fetch: the format.
		{"format without {}", fetchHead + "secret_header = \"A\"\nsecret_format = \"Bearer\"\n" + apiHosts,
			[]string{`g.toml:7: secret_format: "Bearer" must hold "{}", where the secret goes, exactly once (it holds it 0 times)`}},
		{"format empty", fetchHead + "secret_header = \"A\"\nsecret_format = \"\"\n" + apiHosts,
			[]string{`g.toml:7: secret_format: "" must hold "{}", where the secret goes, exactly once (it holds it 0 times)`}},
		{"format twice", fetchHead + "secret_header = \"A\"\nsecret_format = \"{}:{}\"\n" + apiHosts,
			[]string{`g.toml:7: secret_format: "{}:{}" must hold "{}", where the secret goes, exactly once (it holds it 2 times)`}},
		{"format with CRLF", fetchHead + "secret_header = \"A\"\nsecret_format = \"{}\\r\\nX-Evil: 1\"\n" + apiHosts,
			// Printable doubles the backslashes %q wrote.
			[]string{`g.toml:7: secret_format: "{}\\r\\nX-Evil: 1" must be printable ASCII: byte 2 is 0x0d`}},
		{"format not ASCII", fetchHead + "secret_header = \"A\"\nsecret_format = \"é {}\"\n" + apiHosts,
			[]string{`g.toml:7: secret_format: "é {}" must be printable ASCII: byte 0 is 0xc3`}},

		// http_fetch: the hosts.
		{"secret_hosts empty", fetchHead + "secret_header = \"A\"\nsecret_hosts = []\n" + apiHosts,
			[]string{`g.toml:7: secret_hosts: names no host; leave it out to send the secret to every host of constraints.hosts`}},
		{"secret_hosts outside", fetchHead + "secret_header = \"A\"\nsecret_hosts = [\"api.example.com\", \"evil.com\"]\n" + apiHosts,
			[]string{`g.toml:7: secret_hosts: "evil.com" is not covered by constraints.hosts: the secret may go only to hosts the grant allows`}},
		{"wildcard over a plain host", fetchHead + "secret_header = \"A\"\nsecret_hosts = [\"*.example.com\"]\n" + apiHosts,
			[]string{`g.toml:7: secret_hosts: "*.example.com" is not covered by constraints.hosts: the secret may go only to hosts the grant allows`}},
		{"bare name under a wildcard", fetchHead + "secret_header = \"A\"\nsecret_hosts = [\"example.com\"]\n" + wildHosts,
			[]string{`g.toml:7: secret_hosts: "example.com" is not covered by constraints.hosts: the secret may go only to hosts the grant allows`}},
		{"wildcard under a plain host", fetchHead + "secret_header = \"A\"\nsecret_hosts = [\"*.api.example.com\"]\n" + apiHosts,
			[]string{`g.toml:7: secret_hosts: "*.api.example.com" is not covered by constraints.hosts: the secret may go only to hosts the grant allows`}},
		{"secret_hosts invalid, on its own line", fetchHead + "secret_header = \"A\"\nsecret_hosts = [\n  \"api.example.com\",\n  \"Example.com\",\n]\n" + apiHosts,
			[]string{`g.toml:9: secret_hosts: "Example.com" is not a valid host pattern: it has a byte outside [a-z0-9-]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := grantsDir(t, map[string]string{"g.toml": tc.file})
			set, ps, err := policy.LoadGrants(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, policy.FormatProblem(p))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") || (set != nil) != (tc.want == nil) {
				t.Errorf("file:\n%s\ngot (set %v)\n%s\nwant\n%s", tc.file, set != nil, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func transport(h string) string {
	return `g.toml:6: secret_header: "` + h + `" is a header the connection itself uses (framing, hop-by-hop or proxy); name the header the service reads the secret from`
}

// TestSecretHelpers: the exported checks the loading rules use.
func TestSecretHelpers(t *testing.T) {
	for name, want := range map[string]bool{"a": true, "api-key": true, "a_b": true, "0": true, strings.Repeat("z", 64): true,
		"": false, "A": false, ".": false, "..": false, "a/b": false, "a.b": false, "a b": false, strings.Repeat("z", 65): false, "é": false} {
		if got := policy.ValidSecretName(name); got != want {
			t.Errorf("ValidSecretName(%q) = %v", name, got)
		}
	}
	for h, ok := range map[string]bool{"Authorization": true, "X-Api-Key": true, "cookie": true, "Proxy": true, "Hosts": true,
		"HOST": false, "proxy-connection": false, "Expect": false, "HTTP2-Settings": false, "A\x00": false, "Ä": false} {
		if err := policy.CheckSecretHeader(h); (err == nil) != ok {
			t.Errorf("CheckSecretHeader(%q) = %v", h, err)
		}
	}
}
