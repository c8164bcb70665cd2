package inferproxy

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"boxmaker/unixsock"
	"boxmaker/wire"
)

// Config is inferproxy's configuration file, read strictly by
// wire.DecodeConfig (keys spelled exactly, each value of its TOML type):
//
//	[upstream]
//	url = "http://127.0.0.1:8080"   # llama-server: http, host and port, nothing else
//	[listen]
//	socket = "/var/lib/boxmaker/run/loop-infer/infer.sock"
//	[limits]
//	max_request_bytes = 8388608     # optional; this is the default
//	[peers]
//	socket = { user = "boxmaker-loopd" }  # optional: the only client let in
type Config struct {
	Upstream struct {
		URL string `toml:"url"`
	} `toml:"upstream"`
	Listen struct {
		Socket string `toml:"socket"`
	} `toml:"listen"`
	Limits struct {
		MaxRequestBytes int64 `toml:"max_request_bytes"`
	} `toml:"limits"`
	// Peers names the only client infer.sock lets through, checked with
	// SO_PEERCRED on every connection (unixsock.Rule); absent, any client
	// the socket's file modes let in is served.
	Peers struct {
		Socket *unixsock.Rule `toml:"socket"`
	} `toml:"peers"`
}

// DefaultMaxRequestBytes bounds a request body when the file does not.
// loopd's largest request is a whole epoch's history; 8 MiB is far past a
// full context of any model it runs, and far short of hurting the host.
const DefaultMaxRequestBytes = 8 << 20

// maxRequestBytesCeiling is the most a file may allow: the proxy holds a
// request body in memory before forwarding it.
const maxRequestBytesCeiling = 1 << 30

// maxSocketPath is the room in sockaddr_un's sun_path (108 bytes) less its
// NUL.
const maxSocketPath = unixsock.MaxPath

// LoadConfig reads and checks the configuration file at path. Every
// problem is a *wire.ConfigError naming path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &wire.ConfigError{File: path, Problem: err.Error()}
	}
	return parseConfig(path, data)
}

// requiredKeys have no default: without them the proxy has nothing to
// forward to or no socket to listen on.
var requiredKeys = []string{"upstream.url", "listen.socket"}

func parseConfig(file string, data []byte) (*Config, error) {
	cfg := &Config{}
	// The default stays only when the file leaves the key out: an explicit
	// 0 is decoded over it and refused by check.
	cfg.Limits.MaxRequestBytes = DefaultMaxRequestBytes
	if err := wire.DecodeConfig(file, data, cfg); err != nil {
		return nil, err
	}
	for _, key := range requiredKeys {
		// Line 0 is a key the file does not write; an empty string written
		// is present, and check says what is wrong with it.
		if wire.ConfigKeyLine(data, key) == 0 {
			return nil, &wire.ConfigError{File: file, Problem: key + ": missing required key"}
		}
	}
	return cfg, cfg.check(file, data)
}

// check validates the values.
func (c *Config) check(file string, data []byte) error {
	bad := func(table, key, problem string) error {
		return &wire.ConfigError{File: file, Line: wire.ConfigKeyLine(data, table+"."+key), Problem: fmt.Sprintf("%s.%s: %s", table, key, problem)}
	}
	if p := checkUpstream(c.Upstream.URL); p != "" {
		return bad("upstream", "url", p)
	}
	s := c.Listen.Socket
	switch {
	case !filepath.IsAbs(s) || filepath.Clean(s) != s:
		return bad("listen", "socket", fmt.Sprintf("%q must be an absolute, clean path", s))
	case len(s) > maxSocketPath:
		return bad("listen", "socket", fmt.Sprintf("%q is longer than a Unix socket path may be (%d bytes)", s, maxSocketPath))
	}
	if n := c.Limits.MaxRequestBytes; n < 1 || n > maxRequestBytesCeiling {
		return bad("limits", "max_request_bytes", fmt.Sprintf("%d is not between 1 and %d", n, maxRequestBytesCeiling))
	}
	// Names become ids once, here: an unknown one stops inferproxy now,
	// not at its first client.
	if r := c.Peers.Socket; r != nil {
		if err := r.Resolve(); err != nil {
			return bad("peers", "socket", err.Error())
		}
	}
	return nil
}

// checkUpstream allows exactly http://host:port (a trailing "/" too): the
// proxy forwards paths itself and must not be pointed anywhere else.
func checkUpstream(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a URL", raw)
	case u.Scheme != "http":
		return fmt.Sprintf("%q: the scheme must be http (the model server is on this host or the tailnet, and speaks plain HTTP)", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || (u.Path != "" && u.Path != "/"):
		return fmt.Sprintf("%q must be http://host:port and nothing more", raw)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return fmt.Sprintf("%q must name a host and a port", raw)
	}
	return ""
}
