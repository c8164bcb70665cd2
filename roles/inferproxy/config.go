package inferproxy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// Config is inferproxy's configuration file:
//
//	[upstream]
//	url = "http://127.0.0.1:8080"   # llama-server: http, host and port, nothing else
//	[listen]
//	socket = "/var/lib/boxmaker/run/loop-infer/infer.sock"
//	[limits]
//	max_request_bytes = 8388608     # optional; this is the default
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
}

// DefaultMaxRequestBytes bounds a request body when the file does not.
// loopd's largest request is a whole epoch's history; 8 MiB is far past a
// full context of any model it runs, and far short of hurting the host.
const DefaultMaxRequestBytes = 8 << 20

// maxRequestBytesCeiling is the most a file may allow: the proxy holds a
// request body in memory before forwarding it.
const maxRequestBytesCeiling = 1 << 30

// maxSocketPath is the room in sockaddr_un's sun_path (108 bytes) less its
// NUL, and less one for the "~" of the name the socket is bound at before
// it is renamed into place (see listenUnix).
const maxSocketPath = 106

// The keys the file may hold, exactly as written: go-toml matches struct
// fields case-insensitively, so "URL" would otherwise set url.
var configKeys = map[string][]string{
	"upstream": {"url"},
	"listen":   {"socket"},
	"limits":   {"max_request_bytes"},
}

// ConfigError is one problem with the configuration file, at a line when
// it is known (0 otherwise).
type ConfigError struct {
	File    string
	Line    int
	Problem string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Problem)
}

// LoadConfig reads and checks the configuration file at path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Problem: err.Error()}
	}
	cfg, err := parseConfig(data)
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = path
		}
		return nil, err
	}
	return cfg, nil
}

func parseConfig(data []byte) (*Config, error) {
	if !utf8.Valid(data) {
		return nil, &ConfigError{Problem: "the file is not valid UTF-8"}
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, tomlError(err)
	}
	if err := checkShape(data, doc); err != nil {
		return nil, err
	}
	cfg := &Config{}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return nil, tomlError(err)
	}
	if cfg.Limits.MaxRequestBytes == 0 && !has(doc, "limits", "max_request_bytes") {
		cfg.Limits.MaxRequestBytes = DefaultMaxRequestBytes
	}
	return cfg, cfg.check(data)
}

// checkShape allows only the known tables and keys, spelled exactly, with
// values of the right TOML type, and requires url and socket.
func checkShape(data []byte, doc map[string]any) error {
	for _, table := range slices.Sorted(maps.Keys(doc)) {
		keys, known := configKeys[table]
		t, isTable := doc[table].(map[string]any)
		if !known || !isTable {
			return &ConfigError{Line: findLine(data, table, ""), Problem: fmt.Sprintf("%s: unknown table (the file has [upstream], [listen] and [limits])", table)}
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if !slices.Contains(keys, k) {
				return &ConfigError{Line: findLine(data, table, k), Problem: fmt.Sprintf("%s.%s: unknown key", table, k)}
			}
			_, isString := t[k].(string)
			_, isInt := t[k].(int64)
			want, ok := "a string", isString
			if k == "max_request_bytes" {
				want, ok = "an integer", isInt
			}
			if !ok {
				return &ConfigError{Line: findLine(data, table, k), Problem: fmt.Sprintf("%s.%s: must be %s", table, k, want)}
			}
		}
	}
	for _, req := range [][2]string{{"upstream", "url"}, {"listen", "socket"}} {
		if !has(doc, req[0], req[1]) {
			return &ConfigError{Problem: fmt.Sprintf("%s.%s: missing required key", req[0], req[1])}
		}
	}
	return nil
}

// check validates the values.
func (c *Config) check(data []byte) error {
	bad := func(table, key, problem string) error {
		return &ConfigError{Line: findLine(data, table, key), Problem: fmt.Sprintf("%s.%s: %s", table, key, problem)}
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

func tomlError(err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return &ConfigError{Line: row, Problem: firstLine(de.Error())}
	}
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		return tomlError(&sm.Errors[0])
	}
	return &ConfigError{Problem: firstLine(err.Error())}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimPrefix(s, "toml: ")
}

func has(doc map[string]any, table, key string) bool {
	t, _ := doc[table].(map[string]any)
	_, ok := t[key]
	return ok
}

// findLine is the 1-based line that assigns key inside [table] (or, with
// key "", that opens [table]), or 0. The parsed map has no positions; this
// only points the owner at the right line.
func findLine(data []byte, table, key string) int {
	current := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(t, "["); ok {
			name, _, _ = strings.Cut(name, "]")
			current = strings.Trim(strings.TrimSpace(name), `"'`)
			if key == "" && current == table {
				return i + 1
			}
			continue
		}
		if key == "" || current != table {
			continue
		}
		k, _, ok := strings.Cut(t, "=")
		if ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			return i + 1
		}
	}
	return 0
}
