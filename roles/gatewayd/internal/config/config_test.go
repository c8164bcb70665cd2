package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const owner = "8xk3q9wzb7f1jdm4ytr6hcn2pa"

const good = `[mattermost]
url = "https://chat.example.net"
token_file = "/run/credentials/gatewayd/token"
owners = ["` + owner + `"]
[sockets]
gateway = "/var/lib/boxmaker/run/broker-gateway/gateway.sock"
loop = "/var/lib/boxmaker/run/gateway-loop/loop.sock"
`

func TestParseGood(t *testing.T) {
	c, err := Parse("gatewayd.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Mattermost.URL != "https://chat.example.net" || c.Mattermost.Owners[0] != owner ||
		c.Sockets.Loop != "/var/lib/boxmaker/run/gateway-loop/loop.sock" || c.StateFile() != "/var/lib/boxmaker/gateway/state.json" {
		t.Fatalf("parsed %+v", c)
	}
}

func TestParsePeers(t *testing.T) {
	c, err := Parse("gatewayd.toml", []byte(good))
	if err != nil || c.Peers.Gateway != nil {
		t.Fatalf("without [peers]: %+v %v", c.Peers, err)
	}
	c, err = Parse("gatewayd.toml", []byte(good+"[peers]\ngateway = { user = \"nobody\" }\n"))
	if err != nil || c.Peers.Gateway == nil || c.Peers.Gateway.String() != "user nobody (uid 65534)" {
		t.Fatalf("with [peers]: %+v %v", c.Peers, err)
	}
}

func TestDefaults(t *testing.T) {
	c, err := Parse("g.toml", []byte("[mattermost]\nurl = \"http://127.0.0.1:8065\"\ntoken_file = \"/t\"\nowners = [\""+owner+"\"]\n[paths]\nhome = \"/h\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sockets.Gateway != "/h/run/broker-gateway/gateway.sock" || c.Sockets.Loop != "/h/run/gateway-loop/loop.sock" {
		t.Fatalf("defaults: %+v", c.Sockets)
	}
}

// Every bad file names the file, the line and the runbook entry.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, edit, want string }{
		{"unknown key", good + "colour = 1\n", "colour"},
		{"miscased key", strings.Replace(good, "url =", "URL =", 1), "URL"},
		{"token in the file", strings.Replace(good, "token_file", "token", 1), "token"},
		{"no owners", strings.Replace(good, `["`+owner+`"]`, "[]", 1), "at least one"},
		{"bad owner", strings.Replace(good, owner, "kyle", 1), "not a Mattermost user id"},
		{"owner twice", strings.Replace(good, `["`+owner+`"]`, `["`+owner+`", "`+owner+`"]`, 1), "twice"},
		{"path in url", strings.Replace(good, "chat.example.net", "chat.example.net/api", 1), "path"},
		{"query in url", strings.Replace(good, "chat.example.net", "chat.example.net?x=1", 1), "query"},
		{"user in url", strings.Replace(good, "https://", "https://u:p@", 1), "user name"},
		{"fragment", strings.Replace(good, "chat.example.net", "chat.example.net#x", 1), "fragment"},
		{"ftp", strings.Replace(good, "https://", "ftp://", 1), "http"},
		{"no url", strings.Replace(good, `url = "https://chat.example.net"`, "", 1), "url is required"},
		{"relative token file", strings.Replace(good, "/run/credentials", "run/credentials", 1), "absolute"},
		{"relative socket", strings.Replace(good, `gateway = "/var`, `gateway = "var`, 1), "absolute"},
		{"long socket", strings.Replace(good, "/var/lib/boxmaker/run/broker-gateway", "/"+strings.Repeat("d", 120), 1), "at most 107"},
		{"same socket", strings.Replace(good, "broker-gateway/gateway.sock", "gateway-loop/loop.sock", 1), "different"},
		{"unknown peer user", good + "[peers]\ngateway = { user = \"bx-no-such-user\" }\n", `gatewayd.toml:9: [peers] gateway: there is no user "bx-no-such-user" on this system`},
		{"peer group unknown", good + "[peers]\ngateway = { group = \"bx-no-such-group\" }\n", `gatewayd.toml:9: [peers] gateway: there is no group "bx-no-such-group"`},
		{"peer rule empty", good + "[peers]\ngateway = {}\n", `gatewayd.toml:9: [peers] gateway: give one of user = "name" or group = "name"`},
		{"peer rule for loop", good + "[peers]\nloop = { user = \"root\" }\n", `gatewayd.toml:9: unknown key "peers.loop"`},
	} {
		_, err := Parse("gatewayd.toml", []byte(tc.edit))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "gatewayd.toml:") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q; want the file and %q", tc.name, msg, tc.want)
		}
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	const secret = "xoxo4k3q9wzb7f1jdm4ytr6hcn"
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	tok, err := ReadToken(write("ok", secret+"\n", 0o600))
	if err != nil || tok.Value() != secret {
		t.Fatalf("ReadToken: %v, %d bytes", err, len(tok.Value()))
	}
	for _, f := range []string{"%v", "%s", "%+v", "%#v", "%q", "%x"} {
		if out := strings.ReplaceAll(fmtSprintf(f, tok), " ", ""); strings.Contains(out, secret) || strings.Contains(out, "786f786f") {
			t.Errorf("%s shows the token: %s", f, out)
		}
	}
	os.Symlink(filepath.Join(dir, "ok"), filepath.Join(dir, "link"))
	os.Mkdir(filepath.Join(dir, "dir"), 0o700)
	for name, path := range map[string]string{
		"group-readable": write("g", secret, 0o640),
		"world-readable": write("w", secret, 0o604),
		"empty":          write("e", "", 0o600),
		"two lines":      write("two", secret+"\n"+secret+"\n", 0o600),
		"space":          write("sp", "a b", 0o600),
		"huge":           write("h", strings.Repeat("a", 300), 0o600),
		"symlink":        filepath.Join(dir, "link"),
		"directory":      filepath.Join(dir, "dir"),
		"missing":        filepath.Join(dir, "none"),
	} {
		_, err := ReadToken(path)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, secret) || !strings.Contains(msg, path) || !strings.Contains(msg, "see docs/runbook.md#gatewayd-token-unsafe") {
			t.Errorf("%s: %q; want the path and the runbook line, never the token", name, msg)
		}
	}
}
func fmtSprintf(f string, v any) string {
	return fmt.Sprintf(f, struct{ T any }{v}) + fmt.Sprintf(f, v)
}
