package podman

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/redact"
	"boxmaker/roles/brokerd/internal/runner/runnertest"
	"boxmaker/wire"
)

// secretCases are a grant of each tool that may name a secret, as
// runner.Run hands them to the runtime.
var secretCases = []struct{ tool, grant, args string }{
	{"http_fetch", "secret = \"api-key\"\nsecret_header = \"Authorization\"\nsecret_format = \"Bearer {}\"\n" +
		"secret_hosts = [\"api.example.org\"]\n[constraints]\nhosts = [\"*.example.org\"]", `{"url":"https://api.example.org/v1/me"}`},
	{"shell", "secret = \"api-key\"\nsecret_deliver = \"file\"\n[constraints]\npaths = [\"/home/kyle/scratch\"]", `{"command":"sign < \"$BOXMAKER_SECRET_FILE\"","cwd":"/home/kyle/scratch"}`},
}

// exampleValue stands for a secret in the fixtures; it is no real one.
var exampleValue = []byte("example-secret-value-0123456789")

// TestGoldenSecretSpecs: the container and the toolkit request of a call
// with a secret, byte for byte. Then the rule they show: the value is in
// no container configuration, and the request on the toolkit's stdin
// holds it only for a file delivery; an http_fetch gets the placeholder.
func TestGoldenSecretSpecs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Image = "sha256:" + strings.Repeat("0123456789abcdef", 4)
	leaks := redact.New("api-key", exampleValue)
	for _, tc := range secretCases {
		rec := &runnertest.Recording{}
		grants := grantDir(t, map[string]string{"g.toml": "tool = \"" + tc.tool + "\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n" + tc.grant + "\n"})
		call(t, rec, grants, tc.tool, tc.args)
		s := rec.Specs()[0]
		use, ok := s.Secret()
		if !ok || use.Name != "api-key" {
			t.Fatalf("%s: the RunSpec's secret: %+v %v", tc.tool, use, ok)
		}
		sec := &callSecret{use: use, value: bytes.Clone(exampleValue), placeholder: "boxmaker-secret-" + strings.Repeat("5a", 24), redactor: leaks}
		c := container{name: "boxmaker-RANDOM", scope: "brokerd-0123456789abcdef0123456789abcdef", seccomp: "/var/lib/boxmaker/broker/podman/seccomp.json",
			call: "s-1/1", tool: tc.tool, mounts: s.Mounts(), secretFile: use.File}
		if _, ok := s.Egress(); ok {
			c.egress, c.ca = "/TMP/boxmaker-egress-RANDOM/egress.sock", "/TMP/boxmaker-egress-RANDOM/ca.pem"
		}
		b, err := json.MarshalIndent(specFor(cfg, c), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("podman", tc.tool+"-secret.json"), append(b, '\n'))
		req, err := requestFor(s.Args(), cfg.OutputBytes, nil, sec)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("toolkit", "request-"+tc.tool+"-secret.json"), req.line)

		if leaks.String(string(b)) != string(b) {
			t.Errorf("%s: the container's configuration holds the value", tc.tool)
		}
		var r wire.ToolkitRequest
		if err := wire.Unmarshal(bytes.TrimSuffix(req.line, []byte("\n")), &r); err != nil {
			t.Fatal(err)
		}
		switch {
		case use.File:
			if r.Secret == nil || !bytes.Equal(r.Secret.Value, exampleValue) || r.Secret.Path != wire.ToolkitSecretDir+"/api-key" || r.Header != nil || r.CA != nil {
				t.Errorf("shell: the request %+v", r)
			}
			if !strings.Contains(string(b), `"destination": "`+wire.ToolkitSecretDir+`"`) {
				t.Errorf("shell: no tmpfs for the secret")
			}
		default:
			if r.Secret != nil || r.Header == nil || r.Header.Value != "Bearer "+sec.placeholder || r.CA == nil || *r.CA != caPath {
				t.Errorf("http_fetch: the request %+v", r)
			}
			if line := string(req.line); leaks.String(line) != line {
				t.Errorf("http_fetch: the request line holds the value: %s", line)
			}
		}
	}
}

// TestCallSecretNeverPrinted: fmt of a call's secret names it and shows
// neither the value nor the placeholder.
func TestCallSecretNeverPrinted(t *testing.T) {
	sec := &callSecret{value: bytes.Clone(exampleValue), placeholder: "boxmaker-secret-ph", redactor: redact.New("k", exampleValue)}
	sec.use.Name = "k"
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		out := fmtAny(verb, sec)
		if strings.Contains(out, "example-secret") || strings.Contains(out, "boxmaker-secret-ph") || strings.Contains(out, "6578616d706c65") {
			t.Errorf("%s: %s", verb, out)
		}
	}
	sec.close()
	if !bytes.Equal(sec.value, make([]byte, len(exampleValue))) {
		t.Error("close left the value in memory")
	}
}

func fmtAny(verb string, v any) string { return fmt.Sprintf(verb, v) }
