// Package config reads gatewayd's TOML configuration strictly
// (wire.DecodeConfig: every key must be one gatewayd knows, spelled exactly,
// and every error names the file and the line), and the bot's token file.
// A complete file:
//
//	[mattermost]
//	url = "https://chat.example.net"                 # http:// or https://, host and optional port, nothing else
//	token_file = "/etc/boxmaker/gatewayd.token"      # the bot account's access token; 0600
//	owners = ["8xk3q9wzb7f1jdm4ytr6hcn2pa"]          # Mattermost user ids whose words count; at least one
//
//	[sockets]
//	gateway = "/var/lib/boxmaker/run/broker-gateway/gateway.sock"   # gatewayd listens; brokerd connects
//	loop = "/var/lib/boxmaker/run/gateway-loop/loop.sock"           # loopd listens here too
//
//	[paths]
//	home = "/var/lib/boxmaker"   # gatewayd keeps gateway/state.json under it
//
//	[peers]
//	gateway = { user = "boxmaker-brokerd" }   # optional: the only client gateway.sock lets in
//
// The token never appears in this file: only the path of the file that
// holds it.
package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/runbook"
	"boxmaker/unixsock"
	"boxmaker/wire"
)

// Config is gatewayd's configuration after defaults and checks.
type Config struct {
	Mattermost Mattermost `toml:"mattermost"`
	Sockets    Sockets    `toml:"sockets"`
	Paths      Paths      `toml:"paths"`
	Peers      Peers      `toml:"peers"`
}

// Peers names the only client of gateway.sock (brokerd's user when
// deployed), checked with SO_PEERCRED on every connection; absent, any
// client the socket's file modes let in is served.
type Peers struct {
	Gateway *unixsock.Rule `toml:"gateway"`
}

// Mattermost is the server, the bot's token file and the owners.
type Mattermost struct {
	URL       string   `toml:"url"`
	TokenFile string   `toml:"token_file"`
	Owners    []string `toml:"owners"`
}

// Sockets: gateway.sock, where gatewayd listens for brokerd, and loopd's
// loop.sock in the gateway-loop pair directory, where gatewayd is the client.
type Sockets struct {
	Gateway string `toml:"gateway"`
	Loop    string `toml:"loop"`
}

// Paths: Home is BOXMAKER_HOME; gatewayd's state file lives under it.
type Paths struct {
	Home string `toml:"home"`
}

// DefaultHome is BOXMAKER_HOME when [paths] home is left out.
const DefaultHome = "/var/lib/boxmaker"

// maxSocketPath is the longest path a Unix socket address holds.
const maxSocketPath = 107

// StateFile is where gatewayd keeps its threads, approvals and cursors.
func (c Config) StateFile() string { return filepath.Join(c.Paths.Home, "gateway", "state.json") }

// Load reads and checks the config file at path.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w; %s", err, runbook.See("gatewayd-config-invalid"))
	}
	return Parse(path, data)
}

// Parse checks data (the contents of file) and fills in defaults. Every
// problem is a *wire.ConfigError.
func Parse(file string, data []byte) (Config, error) {
	var c Config
	if err := wire.DecodeConfig(file, data, &c); err != nil {
		return Config{}, err
	}
	if c.Paths.Home == "" {
		c.Paths.Home = DefaultHome
	}
	if c.Sockets.Gateway == "" {
		c.Sockets.Gateway = filepath.Join(c.Paths.Home, "run", "broker-gateway", "gateway.sock")
	}
	if c.Sockets.Loop == "" {
		c.Sockets.Loop = filepath.Join(c.Paths.Home, "run", "gateway-loop", "loop.sock")
	}
	if err := c.check(file, data); err != nil {
		return Config{}, err
	}
	return c, nil
}

func (c *Config) check(file string, data []byte) error {
	bad := func(key, problem string) error {
		return &wire.ConfigError{File: file, Line: wire.ConfigKeyLine(data, key),
			Problem: problem + "; " + runbook.See("gatewayd-config-invalid")}
	}
	m := c.Mattermost
	if m.URL == "" {
		return bad("mattermost", "[mattermost] url is required")
	}
	if problem := CheckURL(m.URL); problem != "" {
		return bad("mattermost.url", "[mattermost] url "+problem)
	}
	if m.TokenFile == "" {
		return bad("mattermost", "[mattermost] token_file is required (the token itself never goes in this file)")
	}
	if !filepath.IsAbs(m.TokenFile) {
		return bad("mattermost.token_file", "[mattermost] token_file must be an absolute path")
	}
	if len(m.Owners) == 0 {
		return bad("mattermost", "[mattermost] owners must name at least one Mattermost user id")
	}
	seen := map[string]bool{}
	for _, o := range m.Owners {
		if !wire.ValidMattermostID(o) {
			return bad("mattermost.owners", fmt.Sprintf("[mattermost] owners: %q is not a Mattermost user id (26 characters of a-z and 0-9)", o))
		}
		if seen[o] {
			return bad("mattermost.owners", fmt.Sprintf("[mattermost] owners: %s is listed twice", o))
		}
		seen[o] = true
	}
	if !filepath.IsAbs(c.Paths.Home) {
		return bad("paths.home", "[paths] home must be an absolute path")
	}
	for _, s := range []struct{ key, path string }{{"sockets.gateway", c.Sockets.Gateway}, {"sockets.loop", c.Sockets.Loop}} {
		switch {
		case !filepath.IsAbs(s.path):
			return bad(s.key, fmt.Sprintf("[%s] must be an absolute path", strings.Replace(s.key, ".", "] ", 1)))
		case len(s.path) > maxSocketPath:
			return bad(s.key, fmt.Sprintf("[%s] is %d bytes; a Unix socket path holds at most %d", strings.Replace(s.key, ".", "] ", 1), len(s.path), maxSocketPath))
		}
	}
	if c.Sockets.Gateway == c.Sockets.Loop {
		return bad("sockets", "[sockets] gateway and loop must be two different sockets")
	}
	// Names become ids once, here: an unknown one stops gatewayd now, not
	// at brokerd's first connection.
	if r := c.Peers.Gateway; r != nil {
		if err := r.Resolve(); err != nil {
			return bad("peers.gateway", "[peers] gateway: "+err.Error())
		}
	}
	return nil
}

// CheckURL says what is wrong with a Mattermost server URL ("" when
// nothing): the scheme http or https, a host and an optional port, and
// nothing else, so that the token is only ever sent to the server meant.
func CheckURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must start with http:// or https://"
	case u.Opaque != "" || u.Host == "":
		return "must name a host"
	case u.User != nil:
		return "must not hold a user name or password"
	case u.Path != "" || u.RawPath != "":
		return "must not have a path (the API's place, /api/v4, is added by gatewayd)"
	case u.RawQuery != "" || u.ForceQuery:
		return "must not have a query"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "must not have a fragment"
	case u.Port() == "" && strings.HasSuffix(u.Host, ":"):
		return "has an empty port"
	}
	return ""
}
