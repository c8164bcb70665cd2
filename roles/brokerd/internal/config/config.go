// Package config reads brokerd.toml (M3a §2) into a Config: strictly (every
// key must be one brokerd knows, spelled exactly, and every error names the
// file and the line), with defaults filled in and every path absolute.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"boxmaker/roles/brokerd/internal/podman"
	"boxmaker/unixsock"
	"boxmaker/wire"
)

// Config is brokerd's configuration after defaults and checks. A new
// section is one more field with a toml tag: the keys it accepts are read
// from its struct tags (wire.DecodeConfig), and Parse calls its SetDefaults before
// decoding and its Check after, where its type has them.
type Config struct {
	Paths     Paths     `toml:"paths"`
	Sockets   Sockets   `toml:"sockets"`
	Approvals Approvals `toml:"approvals"`
	// Podman is the tool runner (M3b). Without an image, brokerd runs no
	// tool: every allowed call fails (runner.Refusing).
	Podman podman.Config `toml:"podman"`
	// Peers names the only client of each listening socket.
	Peers Peers `toml:"peers"`
	// File is the config file's absolute path, as read; no grant may reach
	// it (Protected).
	File string `toml:"-"`
}

// Paths are where brokerd keeps its state and reads grants.
type Paths struct {
	// Home is BOXMAKER_HOME: audit/, broker/ and run/ live under it.
	Home string `toml:"home"`
	// Grants is the directory of grant files, read at every decision.
	Grants string `toml:"grants"`
	// Secrets is the secrets directory (issue 15): one file per secret a
	// grant may name, the file named after the secret. brokerd alone reads
	// it (policy.CheckSecretsDir, CheckSecretUse, ReadSecret): it refuses to start when the directory is a
	// symbolic link, is not its own, or gives group or others any access,
	// and a call whose secret file is missing or unsafe is denied
	// (secret_unavailable). It may be systemd's $CREDENTIALS_DIRECTORY
	// (LoadCredential=). No grant may reach it (policy's rule 9).
	Secrets string `toml:"secrets"`
	// Jobs is the directory of the owner's job files (issue 17), one
	// scheduled job per file; missing means no jobs. No grant may reach it
	// (Protected), so that no job, nor any session, can create or edit one.
	Jobs string `toml:"jobs"`
}

// Sockets are brokerd's two listening sockets (M3a §6) and gatewayd's.
type Sockets struct {
	// Broker is broker.sock, for loopd's tool requests.
	Broker string `toml:"broker"`
	// Admin is admin.sock, for the owner's approvals and grant checks.
	Admin string `toml:"admin"`
	// Gateway is gateway.sock (issue 14), where gatewayd listens and
	// brokerd is the client: pending approvals go there to be posted on
	// Mattermost, and the owner's answers come back. Optional, with no
	// default: empty means there is no gatewayd, and approvals are answered
	// with bxctl alone (as they always can be).
	Gateway string `toml:"gateway"`
	// Loop is loopd's jobs socket (issue 17, loopd's [listen] jobs), where
	// brokerd starts each scheduled job's run in a session it named and
	// bound to the job first. Optional: empty means jobs do not run (they
	// are still listed, and a due run is logged as not started).
	Loop string `toml:"loop"`
	// MaxBrokerConnections and MaxAdminConnections cap the connections
	// each socket holds at once (issue 12): one more is answered with an
	// error frame and closed, so a flood of broker.sock can neither use
	// up brokerd's descriptors nor starve admin.sock, which has its own.
	MaxBrokerConnections int `toml:"max_broker_connections"`
	MaxAdminConnections  int `toml:"max_admin_connections"`
	// RequestTimeoutMs is how long a connection may stay open without a
	// whole request; an idle one is closed after it.
	RequestTimeoutMs int64 `toml:"request_timeout_ms"`
}

// Defaults of the connection caps and the request timeout. 128 tool calls
// at once is far more than loopd makes; the owner's clients need fewer.
const (
	DefaultMaxBrokerConnections = 128
	DefaultMaxAdminConnections  = 64
	DefaultRequestTimeoutMs     = 30000
	maxConnections              = 1 << 16
)

// SetDefaults fills in the caps and the timeout.
func (s *Sockets) SetDefaults() {
	s.MaxBrokerConnections = DefaultMaxBrokerConnections
	s.MaxAdminConnections = DefaultMaxAdminConnections
	s.RequestTimeoutMs = DefaultRequestTimeoutMs
}

// Check refuses caps outside 1 to 65536 and a timeout under 1 ms. Whether
// the caps fit the descriptor limit is checked at start (serve).
func (s *Sockets) Check() error {
	for _, c := range []struct {
		key string
		n   int
	}{{"max_broker_connections", s.MaxBrokerConnections}, {"max_admin_connections", s.MaxAdminConnections}} {
		if c.n < 1 || c.n > maxConnections {
			return fmt.Errorf("%s must be from 1 to %d", c.key, maxConnections)
		}
	}
	if s.RequestTimeoutMs < 1 {
		return fmt.Errorf("request_timeout_ms must be at least 1")
	}
	return nil
}

// Peers names the only client of each socket brokerd listens on, checked
// with SO_PEERCRED on every connection (unixsock.Rule), e.g.
//
//	[peers]
//	broker = { user = "boxmaker-loopd" }
//	admin = { group = "boxmaker-owner" }
//
// A socket without a rule serves any client its file modes let in
// (development and the demo run every role as one user).
type Peers struct {
	Broker *unixsock.Rule `toml:"broker"`
	Admin  *unixsock.Rule `toml:"admin"`
}

// Approvals configures the pending-approval table.
type Approvals struct {
	// TTLMs is how long an approval waits for the owner, in milliseconds.
	TTLMs int64 `toml:"ttl_ms"`
}

// Checker is a section that checks itself after decoding; the problem it
// returns is reported against the config file.
type Checker interface {
	Check() error
}

// Defaulter is a section that fills in its defaults before decoding, so
// that keys left out keep them.
type Defaulter interface {
	SetDefaults()
}

// Defaults for keys that may be left out.
const (
	DefaultHome   = "/var/lib/boxmaker"
	DefaultGrants = "/etc/boxmaker/grants"
	// DefaultSecrets is beside the grants, in the configuration directory.
	DefaultSecrets = "/etc/boxmaker/secrets"
	DefaultJobs    = "/etc/boxmaker/jobs"
	DefaultTTLMs   = 900000 // 15 min
)

// maxSocketPath is the longest path a Unix socket can bind: sun_path is 108
// bytes with the terminating NUL.
const maxSocketPath = 107

// BrokerSocket and AdminSocket are the sockets' places under home.
func BrokerSocket(home string) string {
	return filepath.Join(home, "run", "loop-broker", "broker.sock")
}

func AdminSocket(home string) string {
	return filepath.Join(home, "run", "owner-broker", "admin.sock")
}

// Load reads and checks the config file at path. getenv supplies
// BOXMAKER_HOME (os.Getenv when nil).
func Load(path string, getenv func(string) string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, getenv)
}

// Parse checks data, the contents of file, and fills in defaults. Every
// problem is a *wire.ConfigError.
func Parse(file string, data []byte, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Config{Approvals: Approvals{TTLMs: DefaultTTLMs}}
	setDefaults(&c)
	if err := wire.DecodeConfig(file, data, &c); err != nil {
		return Config{}, err
	}
	if err := c.fill(file, data, getenv); err != nil {
		return Config{}, err
	}
	return c, checkSections(file, data, &c)
}

// fill applies the defaults and checks the keys of the three sections.
func (c *Config) fill(file string, data []byte, getenv func(string) string) error {
	bad := func(key, problem string) error {
		return &wire.ConfigError{File: file, Line: wire.ConfigKeyLine(data, key), Problem: problem}
	}
	for _, p := range []struct {
		key string
		val *string
	}{{"paths.home", &c.Paths.Home}, {"paths.grants", &c.Paths.Grants}, {"paths.secrets", &c.Paths.Secrets},
		{"paths.jobs", &c.Paths.Jobs}, {"sockets.broker", &c.Sockets.Broker}, {"sockets.admin", &c.Sockets.Admin},
		{"sockets.gateway", &c.Sockets.Gateway}, {"sockets.loop", &c.Sockets.Loop}} {
		if *p.val != "" && !filepath.IsAbs(*p.val) {
			return bad(p.key, fmt.Sprintf("%s must be an absolute path", p.key))
		}
	}
	if c.Paths.Home == "" {
		c.Paths.Home = DefaultHome
		if env := getenv("BOXMAKER_HOME"); env != "" {
			// BOXMAKER_HOME may be relative in development (.state/).
			abs, err := filepath.Abs(env)
			if err != nil {
				return &wire.ConfigError{File: file, Problem: fmt.Sprintf("BOXMAKER_HOME %q: %v", env, err)}
			}
			c.Paths.Home = abs
		}
	}
	if c.Paths.Grants == "" {
		c.Paths.Grants = DefaultGrants
	}
	if c.Paths.Secrets == "" {
		c.Paths.Secrets = DefaultSecrets
	}
	if c.Paths.Jobs == "" {
		c.Paths.Jobs = DefaultJobs
	}
	if file != "" {
		abs, err := filepath.Abs(file)
		if err != nil {
			return &wire.ConfigError{File: file, Problem: fmt.Sprintf("config file %q: %v", file, err)}
		}
		c.File = abs
	}
	if c.Sockets.Broker == "" {
		c.Sockets.Broker = BrokerSocket(c.Paths.Home)
	}
	if c.Sockets.Admin == "" {
		c.Sockets.Admin = AdminSocket(c.Paths.Home)
	}
	for _, s := range []struct{ key, path string }{{"sockets.broker", c.Sockets.Broker}, {"sockets.admin", c.Sockets.Admin},
		{"sockets.gateway", c.Sockets.Gateway}, {"sockets.loop", c.Sockets.Loop}} {
		if len(s.path) > maxSocketPath {
			return bad(s.key, fmt.Sprintf("%s: %s is %d bytes; a Unix socket path is at most %d", s.key, s.path, len(s.path), maxSocketPath))
		}
	}
	if c.Sockets.Broker == c.Sockets.Admin {
		return bad("sockets.admin", "sockets.broker and sockets.admin must be different sockets")
	}
	// brokerd listens on its two sockets and connects to gatewayd's: the
	// same path for both would have brokerd talk to itself.
	if g := c.Sockets.Gateway; g != "" && (g == c.Sockets.Broker || g == c.Sockets.Admin) {
		return bad("sockets.gateway", "sockets.gateway must be a socket of its own, not sockets.broker or sockets.admin")
	}
	if l := c.Sockets.Loop; l != "" && (l == c.Sockets.Broker || l == c.Sockets.Admin || l == c.Sockets.Gateway) {
		return bad("sockets.loop", "sockets.loop must be a socket of its own, not sockets.broker, sockets.admin or sockets.gateway")
	}
	if c.Approvals.TTLMs < 1 {
		return bad("approvals.ttl_ms", "approvals.ttl_ms must be at least 1")
	}
	// Names become ids once, here: an unknown one stops brokerd now, not
	// at its first client.
	for _, p := range []struct {
		key  string
		rule *unixsock.Rule
	}{{"peers.broker", c.Peers.Broker}, {"peers.admin", c.Peers.Admin}} {
		if p.rule == nil {
			continue
		}
		if err := p.rule.Resolve(); err != nil {
			return bad(p.key, p.key+": "+err.Error())
		}
	}
	return nil
}

// setDefaults calls SetDefaults on every section of *c that has one.
func setDefaults(c any) {
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		if d, ok := v.Field(i).Addr().Interface().(Defaulter); ok {
			d.SetDefaults()
		}
	}
}

// checkSections calls Check on every section of *c that has one, so a
// section added later checks its own values without a change here.
func checkSections(file string, data []byte, c any) error {
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		ch, ok := v.Field(i).Addr().Interface().(Checker)
		if !ok {
			continue
		}
		if err := ch.Check(); err != nil {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
			return &wire.ConfigError{File: file, Line: wire.ConfigKeyLine(data, name), Problem: fmt.Sprintf("[%s] %v", name, err)}
		}
	}
	return nil
}
