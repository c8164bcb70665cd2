package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/podman"
	"boxmaker/wire"
)

const full = `# brokerd.toml
[paths]
home = "/srv/bx"
grants = "/srv/grants"

[sockets]
broker = "/srv/bx/b.sock"
admin = "/srv/bx/a.sock"
gateway = "/srv/bx/run/broker-gateway/gateway.sock"
max_broker_connections = 7
max_admin_connections = 3
request_timeout_ms = 500

[approvals]
ttl_ms = 100
`

func env(vals map[string]string) func(string) string {
	return func(k string) string { return vals[k] }
}

func TestParseFull(t *testing.T) {
	c, err := Parse("brokerd.toml", []byte(full), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	want := Config{Paths{"/srv/bx", "/srv/grants", DefaultSecrets, DefaultJobs},
		Sockets{Broker: "/srv/bx/b.sock", Admin: "/srv/bx/a.sock", Gateway: "/srv/bx/run/broker-gateway/gateway.sock", MaxBrokerConnections: 7, MaxAdminConnections: 3, RequestTimeoutMs: 500},
		Approvals{100}, podman.DefaultConfig(), Peers{}, filepath.Join(wd, "brokerd.toml")}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

// TestPodmanAcceptsLimits: the limits brokerd.toml accepts unenforced are
// read as written; the default accepts none.
func TestPodmanAcceptsLimits(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"[podman]\naccept_unenforced = []\n", []string{}},
		{"[podman]\naccept_unenforced = [\"memory\", \"pids\", \"cpu\"]\n", []string{"memory", "pids", "cpu"}},
		{"[podman]\naccept_unenforced = [\"nofile\", \"fsize\"]\nshared_dir = \"/srv/bx/run/tools-broker\"\nuserns = \"auto\"\n", []string{"nofile", "fsize"}},
	} {
		c, err := Parse("brokerd.toml", []byte(tc.text), env(nil))
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if !reflect.DeepEqual(c.Podman.AcceptUnenforced, tc.want) {
			t.Errorf("%q: %#v, want %#v", tc.text, c.Podman.AcceptUnenforced, tc.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, text, envHome, home string
	}{
		{"empty file, no env", "", "", "/var/lib/boxmaker"},
		{"BOXMAKER_HOME", "", "/home/kyle/bx", "/home/kyle/bx"},
		{"file beats env", "[paths]\nhome = \"/opt/bx\"\n", "/home/kyle/bx", "/opt/bx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("brokerd.toml", []byte(tc.text), env(map[string]string{"BOXMAKER_HOME": tc.envHome}))
			if err != nil {
				t.Fatal(err)
			}
			wd, _ := os.Getwd()
			want := Config{
				File:  filepath.Join(wd, "brokerd.toml"),
				Paths: Paths{tc.home, "/etc/boxmaker/grants", "/etc/boxmaker/secrets", "/etc/boxmaker/jobs"},
				Sockets: Sockets{Broker: tc.home + "/run/loop-broker/broker.sock", Admin: tc.home + "/run/owner-broker/admin.sock",
					MaxBrokerConnections: 128, MaxAdminConnections: 64, RequestTimeoutMs: 30000},
				Approvals: Approvals{900000},
				Podman:    podman.DefaultConfig(),
			}
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("got %+v, want %+v", c, want)
			}
		})
	}
}

func TestRelativeEnvHomeIsMadeAbsolute(t *testing.T) {
	c, err := Parse("brokerd.toml", nil, env(map[string]string{"BOXMAKER_HOME": ".state"}))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if c.Paths.Home != filepath.Join(wd, ".state") {
		t.Fatalf("home %q", c.Paths.Home)
	}
}

// TestParseRefuses: every shape of key is checked by wire.DecodeConfig and
// tested there (quoted, dotted and inline keys, arrays of tables, syntax);
// these cases show that brokerd's file goes through it, [podman] included.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown section", full + "\n[podman2]\nx = 1\n", `brokerd.toml:17: unknown key "podman2"`},
		{"unknown key", strings.Replace(full, "ttl_ms", "ttl", 1), `brokerd.toml:15: unknown key "approvals.ttl"`},
		{"case variant key", strings.Replace(full, "home =", "Home =", 1), `brokerd.toml:3: unknown key "paths.Home"`},
		{"case variant table", strings.Replace(full, "[sockets]", "[Sockets]", 1), `brokerd.toml:6: unknown key "Sockets"`},
		{"podman case variant", full + "[podman]\nImage = \"x\"\n", `brokerd.toml:17: unknown key "podman.Image"`},
		{"unknown limit accepted", "[podman]\naccept_unenforced = [\"swap\"]\n", `brokerd.toml:1: [podman] accept_unenforced: "swap" is not a limit brokerd checks; it may name memory, pids, cpu, nofile, fsize`},
		{"accepted limit not a list", "[podman]\naccept_unenforced = \"memory\"\n", `brokerd.toml:2: cannot decode TOML string into struct field podman.Config.AcceptUnenforced of type []string`},
		{"accepted limit twice", "[podman]\naccept_unenforced = [\"memory\", \"memory\"]\n", `brokerd.toml:1: [podman] accept_unenforced names "memory" twice`},
		{"never acceptable", "[podman]\naccept_unenforced = [\"capeff\"]\n", `brokerd.toml:1: [podman] accept_unenforced: "capeff" is not a limit brokerd checks`},
		{"value for a table", "paths = 1\n", `brokerd.toml:1: "paths" must be a table`},
		{"duplicate key", "[paths]\nhome = \"/a\"\nhome = \"/b\"\n", "brokerd.toml:3: key home is already defined"},
		{"wrong type", "[approvals]\nttl_ms = \"soon\"\n", `brokerd.toml:2: "approvals.ttl_ms" must be an integer`},
		{"syntax", "[paths\n", "brokerd.toml:1: expected ']' to close table name"},
		{"not UTF-8", "[paths]\nhome = \"/\xff\"\n", "brokerd.toml:2: the file is not valid UTF-8"},
		{"zero ttl", "[approvals]\nttl_ms = 0\n", "brokerd.toml:2: approvals.ttl_ms must be at least 1"},
		{"relative home", "[paths]\nhome = \"state\"\n", "brokerd.toml:2: paths.home must be an absolute path"},
		{"relative grants", "\n[paths]\ngrants = \"g\"\n", "brokerd.toml:3: paths.grants must be an absolute path"},
		{"relative socket", "[sockets]\nadmin = \"a.sock\"\n", "brokerd.toml:2: sockets.admin must be an absolute path"},
		{"long socket", "[sockets]\nbroker = \"/" + strings.Repeat("x", 120) + "\"\n", "brokerd.toml:2: sockets.broker: /xxx"},
		{"no broker connections", "[sockets]\nmax_broker_connections = 0\n", "brokerd.toml:1: [sockets] max_broker_connections must be from 1 to 65536"},
		{"too many admin connections", "\n[sockets]\nmax_admin_connections = 65537\n", "brokerd.toml:2: [sockets] max_admin_connections must be from 1 to 65536"},
		{"no request timeout", "[sockets]\nrequest_timeout_ms = 0\n", "brokerd.toml:1: [sockets] request_timeout_ms must be at least 1"},
		{"same socket", "[sockets]\nbroker = \"/s\"\nadmin = \"/s\"\n", "brokerd.toml:3: sockets.broker and sockets.admin must be different"},
		{"relative gateway", "[sockets]\n\ngateway = \"run/gateway.sock\"\n", "brokerd.toml:3: sockets.gateway must be an absolute path"},
		{"long gateway", "[sockets]\ngateway = \"/" + strings.Repeat("g", 107) + "\"\n", "brokerd.toml:2: sockets.gateway: /ggg"},
		{"gateway is broker", "[sockets]\nbroker = \"/s\"\ngateway = \"/s\"\n", "brokerd.toml:3: sockets.gateway must be a socket of its own"},
		{"gateway is the default admin", "[paths]\nhome = \"/h\"\n[sockets]\ngateway = \"/h/run/owner-broker/admin.sock\"\n",
			"brokerd.toml:4: sockets.gateway must be a socket of its own"},
		{"gateway is a number", "[sockets]\ngateway = 1\n", `brokerd.toml:2: "sockets.gateway" must be a string`},
		{"gateway case variant", "[sockets]\nGateway = \"/g\"\n", `brokerd.toml:2: unknown key "sockets.Gateway"`},
		{"unknown peer user", "[peers]\nadmin = { group = \"root\" }\nbroker = { user = \"bx-no-such-user\" }\n", `brokerd.toml:3: peers.broker: there is no user "bx-no-such-user" on this system`},
		{"unknown peer group", "[peers]\nadmin = { group = \"bx-no-such-group\" }\n", `brokerd.toml:2: peers.admin: there is no group "bx-no-such-group" on this system`},
		{"peer user and group", "[peers.admin]\nuser = \"root\"\ngroup = \"root\"\n", `brokerd.toml:1: peers.admin: give one of user = "name" or group = "name", not both`},
		{"peer rule not a table", "[peers]\nbroker = \"root\"\n", `brokerd.toml:2: "peers.broker" must be a table`},
		{"peer rule unknown key", "[peers]\nbroker = { uid = 0 }\n", `brokerd.toml:2: unknown key "peers.broker.uid"`},
		{"peers for the gateway", "[peers]\ngateway = { user = \"root\" }\n", `brokerd.toml:2: unknown key "peers.gateway"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("brokerd.toml", []byte(tc.text), env(nil))
			var ce *wire.ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParsePeers: [peers] is optional; its rules are resolved to ids.
func TestParsePeers(t *testing.T) {
	c, err := Parse("brokerd.toml", []byte("[peers]\nbroker = { user = \"nobody\" }\nadmin = { group = \"nogroup\" }\n"), env(nil))
	if err != nil || c.Peers.Broker.String() != "user nobody (uid 65534)" || c.Peers.Admin.String() != "group nogroup (gid 65534)" {
		t.Fatalf("with [peers]: %+v %v", c.Peers, err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.toml"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("got %v", err)
	}
}

// extended is what Config looks like once a section is added: the keys it
// accepts come from its tags, and its Check is called.
type extended struct {
	Config
	Extra extra `toml:"extra"`
}

type extra struct {
	Limit int    `toml:"limit"`
	Name  string `toml:"name"`
}

func (e *extra) SetDefaults() { e.Limit = 7 }

func (e *extra) Check() error {
	if e.Limit < 0 {
		return errors.New("limit must not be negative")
	}
	return nil
}

func TestSectionsComeFromTags(t *testing.T) {
	var e extended
	if err := wire.DecodeConfig("f.toml", []byte("[paths]\nhome = \"/h\"\n[extra]\nlimit = 3\nname = \"x\"\n"), &e); err != nil {
		t.Fatal(err)
	}
	if e.Paths.Home != "/h" || e.Extra != (extra{3, "x"}) {
		t.Fatalf("got %+v", e)
	}
	if err := wire.DecodeConfig("f.toml", []byte("[extra]\nLimit = 3\n"), &extended{}); err == nil || err.Error() != `f.toml:2: unknown key "extra.Limit"` {
		t.Fatalf("got %v", err)
	}
	var d extended
	setDefaults(&d)
	if d.Extra.Limit != 7 {
		t.Fatalf("defaults not set: %+v", d.Extra)
	}
	data := []byte("[extra]\nlimit = -1\n")
	var c extended
	c.Extra.Limit = -1
	if err := checkSections("f.toml", data, &c); err == nil || err.Error() != "f.toml:1: [extra] limit must not be negative" {
		t.Fatalf("got %v", err)
	}
}
