package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

const good = `[paths]
home = "/var/lib/boxmaker"

[model]
socket = "/var/lib/boxmaker/run/loop-infer/infer.sock"
n_ctx = 8192
max_steps = 8

[listen]
socket = "/var/lib/boxmaker/run/owner-loop/loop.sock"

[broker]
socket = "/var/lib/boxmaker/run/loop-broker/broker.sock"
`

func TestParseGood(t *testing.T) {
	c, err := Parse("loopd.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Paths.Home != "/var/lib/boxmaker" || c.Model.NCtx != 8192 || c.Model.MaxSteps != 8 || c.Broker.Socket == "" {
		t.Fatalf("got %+v", c)
	}
	// Defaults.
	if c.Model.EpochPercent != DefaultEpochPercent || c.Model.ReplyTimeoutS != DefaultReplyTimeoutS ||
		c.Model.IdleTimeoutS != DefaultIdleTimeoutS || c.Model.SystemPrompt != DefaultSystemPrompt ||
		c.Model.MaxAnswerTokens != DefaultMaxAnswerTokens {
		t.Fatalf("defaults: %+v", c.Model)
	}
}

const ownerSock = `"/var/lib/boxmaker/run/owner-loop/loop.sock"`

// longSock is longer than a Unix socket path may be.
var longSock = "/" + strings.Repeat("d", 100) + "/loop.sock"

// withGateway is good with [listen] gateway = v on line 11.
func withGateway(v string) string {
	return strings.Replace(good, "socket = "+ownerSock+"\n", "socket = "+ownerSock+"\ngateway = "+v+"\n", 1)
}

// TestParseGateway: [listen] gateway is optional; when set, loopd listens
// on both, the owner's socket first.
func TestParseGateway(t *testing.T) {
	c, err := Parse("loopd.toml", []byte(good))
	if err != nil || c.Listen.Gateway != "" || len(c.Listen.Sockets()) != 1 || c.Listen.Sockets()[0] != c.Listen.Socket {
		t.Fatalf("without: %+v, %v", c.Listen, err)
	}
	c, err = Parse("loopd.toml", []byte(withGateway(`"/var/lib/boxmaker/run/gateway-loop/loop.sock"`)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/var/lib/boxmaker/run/owner-loop/loop.sock", "/var/lib/boxmaker/run/gateway-loop/loop.sock"}
	if got := c.Listen.Sockets(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("sockets %q", got)
	}
	// The longest path that binds is accepted.
	longest := "/" + strings.Repeat("g", MaxSocketPath-len("//loop.sock")) + "/loop.sock"
	if len(longest) != MaxSocketPath {
		t.Fatalf("%d bytes", len(longest))
	}
	if _, err := Parse("loopd.toml", []byte(withGateway(`"`+longest+`"`))); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("loopd.toml", []byte(withGateway(`"`+longest+`x"`))); err == nil {
		t.Fatal("a path one byte too long was accepted")
	}
}

// TestParsePeers: [peers] is optional; its rules are resolved to ids.
func TestParsePeers(t *testing.T) {
	c, err := Parse("loopd.toml", []byte(good))
	if err != nil || c.Peers.Socket != nil || c.Peers.Gateway != nil {
		t.Fatalf("without [peers]: %+v %v", c.Peers, err)
	}
	c, err = Parse("loopd.toml", []byte(withGateway(`"/g/loop.sock"`)+"[peers]\nsocket = { group = \"nogroup\" }\ngateway = { user = \"nobody\" }\n"))
	if err != nil || c.Peers.Socket.String() != "group nogroup (gid 65534)" || c.Peers.Gateway.String() != "user nobody (uid 65534)" {
		t.Fatalf("with [peers]: %+v %v", c.Peers, err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", good + "\n[model2]\nx = 1\n", `loopd.toml:15: unknown key "model2"`},
		{"unknown nested key", strings.Replace(good, "n_ctx = 8192", "slots = 1", 1), `loopd.toml:6: unknown key "model.slots"`},
		{"case variant", strings.Replace(good, "home =", "Home =", 1), `loopd.toml:2: unknown key "paths.Home"`},
		{"wrong type", strings.Replace(good, "n_ctx = 8192", `n_ctx = "one"`, 1), `loopd.toml:6: "model.n_ctx" must be an integer`},
		{"not a table", "paths = 1\n", `loopd.toml:1: "paths" must be a table`},
		{"syntax", "[paths\n", "loopd.toml:1: expected ']' to close table name"},
		{"missing home", strings.Replace(good, `home = "/var/lib/boxmaker"`, "", 1), "loopd.toml:1: [paths] home is required"},
		{"relative home", strings.Replace(good, `home = "/var/lib/boxmaker"`, `home = "state"`, 1), "loopd.toml:2: [paths] home must be an absolute path"},
		{"missing model socket", strings.Replace(good, `socket = "/var/lib/boxmaker/run/loop-infer/infer.sock"`, "", 1), "loopd.toml:4: [model] socket (infer.sock) is required"},
		{"zero steps", strings.Replace(good, "max_steps = 8", "max_steps = 0", 1), "loopd.toml:7: [model] max_steps must be at least 1"},
		{"both prompts", strings.Replace(good, "n_ctx = 8192", "n_ctx = 8192\nsystem_prompt = \"a\"\nsystem_prompt_file = \"b\"", 1), "loopd.toml:8: [model] system_prompt and system_prompt_file are exclusive"},
		{"zero answer tokens", strings.Replace(good, "max_steps = 8", "max_steps = 8\nmax_answer_tokens = 0", 1), "loopd.toml:8: [model] max_answer_tokens must be between 1 and 1048576"},
		{"huge answer tokens", strings.Replace(good, "max_steps = 8", "max_steps = 8\nmax_answer_tokens = 2097152", 1), "loopd.toml:8: [model] max_answer_tokens must be between 1 and 1048576"},
		{"epoch percent", strings.Replace(good, "n_ctx = 8192", "n_ctx = 8192\nepoch_percent = 99", 1), "loopd.toml:7: [model] epoch_percent must be between 10 and 95"},
		{"relative socket", strings.Replace(good, ownerSock, `"run/loop.sock"`, 1), `loopd.toml:10: [listen] socket must be an absolute path, not "run/loop.sock"`},
		{"long socket", strings.Replace(good, ownerSock, `"`+longSock+`"`, 1), "loopd.toml:10: [listen] socket: " + longSock + " is 111 bytes; a Unix socket path is at most 107"},
		{"socket is the model's", strings.Replace(good, ownerSock, `"/var/lib/boxmaker/run/loop-infer/infer.sock"`, 1), "loopd.toml:10: [listen] socket and [model] socket must be different sockets"},
		{"relative gateway", withGateway(`"gateway-loop/loop.sock"`), `loopd.toml:11: [listen] gateway must be an absolute path, not "gateway-loop/loop.sock"`},
		{"empty gateway", withGateway(`""`), ""},
		{"long gateway", withGateway(`"` + longSock + `"`), "loopd.toml:11: [listen] gateway: " + longSock + " is 111 bytes; a Unix socket path is at most 107"},
		{"gateway is the owner's", withGateway(ownerSock), "loopd.toml:11: [listen] gateway and [listen] socket must be different sockets"},
		{"gateway is the owner's, spelt otherwise", withGateway(`"/var/lib/boxmaker/run/owner-loop/./loop.sock"`), "loopd.toml:11: [listen] gateway and [listen] socket must be different sockets"},
		{"gateway is the broker's", withGateway(`"/var/lib/boxmaker/run/loop-broker/broker.sock"`), "loopd.toml:11: [listen] gateway and [broker] socket must be different sockets"},
		{"gateway is the model's", withGateway(`"/var/lib/boxmaker/run/loop-infer/infer.sock"`), "loopd.toml:11: [listen] gateway and [model] socket must be different sockets"},
		{"gateway not a string", withGateway("1"), `loopd.toml:11: "listen.gateway" must be a string`},
		{"unknown peer user", good + "\n[peers]\nsocket = { user = \"bx-no-such-user\" }\n", `loopd.toml:16: [peers] socket: there is no user "bx-no-such-user" on this system`},
		{"peer user and group", good + "\n[peers]\nsocket = { user = \"root\", group = \"root\" }\n", `loopd.toml:16: [peers] socket: give one of user = "name" or group = "name", not both`},
		{"peer rule not a table", good + "\n[peers]\nsocket = \"root\"\n", `loopd.toml:16: "peers.socket" must be a table`},
		{"peer rule unknown key", good + "\n[peers]\nsocket = { gid = 0 }\n", `loopd.toml:16: unknown key "peers.socket.gid"`},
		{"peers for the broker", good + "\n[peers]\nbroker = { user = \"root\" }\n", `loopd.toml:16: unknown key "peers.broker"`},
		{"peers gateway without a gateway", good + "\n[peers]\ngateway = { user = \"root\" }\n", "loopd.toml:16: [peers] gateway names the client of [listen] gateway, which is not set"},
		{"unknown peer group for the gateway", withGateway(`"/g/loop.sock"`) + "\n[peers]\ngateway = { group = \"bx-no-such-group\" }\n", `loopd.toml:17: [peers] gateway: there is no group "bx-no-such-group" on this system`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("loopd.toml", []byte(tc.text))
			var ce *wire.ConfigError
			if tc.want == "" {
				// An empty gateway is no gateway: nothing to check.
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadSystemPromptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "system.md"), []byte("Be brief."), 0o600); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(good, "n_ctx = 8192", "n_ctx = 8192\nsystem_prompt_file = \"system.md\"", 1)
	path := filepath.Join(dir, "loopd.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.SystemPrompt != "Be brief." {
		t.Fatalf("system prompt %q", c.Model.SystemPrompt)
	}
	if err := os.Remove(filepath.Join(dir, "system.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+":7: system_prompt_file:") {
		t.Fatalf("missing file: %v", err)
	}
}

// A file from before sessions shared the server's slots still sets
// [model] slot: it is refused with its line, what changed and the runbook
// entry, whatever its value, rather than ignored.
func TestRetiredSlot(t *testing.T) {
	for _, v := range []string{"0", "1", `"one"`, "-1"} {
		text := strings.Replace(good, "n_ctx = 8192", "n_ctx = 8192\nslot = "+v, 1)
		_, err := Parse("loopd.toml", []byte(text))
		var ce *wire.ConfigError
		if !errors.As(err, &ce) || ce.Line != 7 || ce.Problem != RetiredSlot ||
			!strings.HasSuffix(err.Error(), "remove the line; see docs/runbook.md#loopd-slot-retired") {
			t.Fatalf("slot = %s: %v", v, err)
		}
	}
}
