package inferproxy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

const goodConfig = `[upstream]
url = "http://127.0.0.1:8080"
[listen]
socket = "/var/lib/boxmaker/run/loop-infer/infer.sock"
[limits]
max_request_bytes = 1048576
`

func TestConfigGood(t *testing.T) {
	cfg, err := parseConfig("inferproxy.toml", []byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Upstream.URL != "http://127.0.0.1:8080" || cfg.Listen.Socket != "/var/lib/boxmaker/run/loop-infer/infer.sock" ||
		cfg.Limits.MaxRequestBytes != 1048576 {
		t.Fatalf("%+v", cfg)
	}
	noLimits := strings.Split(goodConfig, "[limits]")[0]
	cfg, err = parseConfig("inferproxy.toml", []byte(noLimits))
	if err != nil || cfg.Limits.MaxRequestBytes != DefaultMaxRequestBytes {
		t.Fatalf("without [limits]: %+v %v", cfg, err)
	}
	cfg, err = parseConfig("inferproxy.toml", []byte(goodConfig+"[peers]\nsocket = { user = \"nobody\" }\n"))
	if err != nil || cfg.Peers.Socket == nil || cfg.Peers.Socket.String() != "user nobody (uid 65534)" {
		t.Fatalf("with [peers]: %+v %v", cfg, err)
	}
	cfg, err = parseConfig("inferproxy.toml", []byte(strings.Replace(goodConfig, `8080"`, `8080/"`, 1)))
	if err != nil || cfg.Upstream.URL != "http://127.0.0.1:8080/" {
		t.Fatalf("trailing slash: %v", err)
	}
}

func TestConfigBad(t *testing.T) {
	long := "/" + strings.Repeat("d", 107)
	for _, tc := range []struct{ name, old, new, want string }{
		{"syntax", `url = "http`, `url = http`, ":2: unexpected character U+0068 'h' at start of value"},
		{"unknown key", "[listen]\n", "URL = \"http://x:1\"\n[listen]\n", `:3: unknown key "upstream.URL"`},
		{"wrong case", "url =", "Url =", `:2: unknown key "upstream.Url"`},
		{"unknown table", "[limits]", "[limit]", `:5: unknown key "limit"`},
		{"string for int", "1048576", `"1048576"`, `:6: "limits.max_request_bytes" must be an integer`},
		{"int for string", `"http://127.0.0.1:8080"`, "8080", `:2: "upstream.url" must be a string`},
		{"missing url", `url = "http://127.0.0.1:8080"`, "", "upstream.url: missing required key"},
		{"missing socket", "[listen]\nsocket = \"/var/lib/boxmaker/run/loop-infer/infer.sock\"\n", "", "listen.socket: missing required key"},
		{"https", "http://127", "https://127", ":2: upstream.url: \"https://127.0.0.1:8080\": the scheme must be http"},
		{"path", "8080\"", "8080/v1\"", ":2: upstream.url: \"http://127.0.0.1:8080/v1\" must be http://host:port"},
		{"query", "8080\"", "8080?x=1\"", "must be http://host:port"},
		{"user", "http://127", "http://me@127", "must be http://host:port"},
		{"no port", "127.0.0.1:8080", "127.0.0.1", "must name a host and a port"},
		{"relative socket", `"/var/lib/boxmaker/run/loop-infer/infer.sock"`, `"run/infer.sock"`, ":4: listen.socket: \"run/infer.sock\" must be an absolute, clean path"},
		{"unclean socket", `"/var/lib/boxmaker/run/loop-infer/infer.sock"`, `"/var/lib/../infer.sock"`, "must be an absolute, clean path"},
		{"long socket", `"/var/lib/boxmaker/run/loop-infer/infer.sock"`, `"` + long + `"`, "longer than a Unix socket path may be"},
		{"zero limit", "1048576", "0", ":6: limits.max_request_bytes: 0 is not between 1 and"},
		{"huge limit", "1048576", "2147483648", "is not between 1 and"},
		{"not utf-8", "[listen]", "# \xff\n[listen]", ":3: the file is not valid UTF-8"},
		{"unknown peer user", "[limits]", "[peers]\nsocket = { user = \"bx-no-such-user\" }\n[limits]", `:6: peers.socket: there is no user "bx-no-such-user" on this system`},
		{"peer user and group", "[limits]", "[peers]\nsocket = { user = \"root\", group = \"root\" }\n[limits]", `:6: peers.socket: give one of user = "name" or group = "name", not both`},
		{"peer rule not a table", "[limits]", "[peers]\nsocket = \"root\"\n[limits]", `:6: "peers.socket" must be a table`},
		{"peer rule unknown key", "[limits]", "[peers]\nsocket = { uid = 0 }\n[limits]", `:6: unknown key "peers.socket.uid"`},
		{"peers for another socket", "[limits]", "[peers]\nbroker = { user = \"root\" }\n[limits]", `:6: unknown key "peers.broker"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(goodConfig, tc.old, tc.new, 1)
			dir := t.TempDir()
			path := filepath.Join(dir, "inferproxy.toml")
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(path)
			var ce *wire.ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), path+":") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s%s", err, path, tc.want)
			}
		})
	}
}

func TestConfigMissingFile(t *testing.T) {
	_, err := LoadConfig("/nonexistent/inferproxy.toml")
	if err == nil || !strings.HasPrefix(err.Error(), "/nonexistent/inferproxy.toml: ") {
		t.Fatalf("got %v", err)
	}
}
