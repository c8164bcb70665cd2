package wire

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// Grant is one grant file, grants/<id>.toml; its id is the file stem. Only the
// form is checked here; what a grant allows is policy's business.
type Grant struct {
	Tool        string     `toml:"tool"`
	Mode        Mode       `toml:"mode"`
	MaxTaint    DataClass  `toml:"max_taint"`
	ResultClass DataClass  `toml:"result_class"` // default private
	Untrusted   bool       `toml:"untrusted"`    // default true
	Expires     *Timestamp `toml:"expires"`      // absent: no expiry
	Job         *string    `toml:"job"`          // issue 17: only in this job's sessions; absent: interactive ones
	Secret      *string    `toml:"secret"`       // name of one secret to inject
	// How the secret reaches the tool (issue 15); each is nil when absent.
	// policy's loading rules say which go with which tool.
	SecretHeader  *string     `toml:"secret_header"`          // http_fetch: the header the value goes in
	SecretFormat  *string     `toml:"secret_format"`          // http_fetch: the header's value, "{}" standing for the secret
	SecretHosts   []string    `toml:"secret_hosts,omitempty"` // http_fetch: the hosts the value may go to; nil when absent
	SecretDeliver *string     `toml:"secret_deliver"`         // shell: "file"
	Constraints   Constraints `toml:"constraints"`            // default empty
}

// Constraints narrow what a grant covers.
type Constraints struct {
	Paths    []string `toml:"paths"`
	Hosts    []string `toml:"hosts"`
	Patterns []string `toml:"patterns"`
}

// GrantError says why a grant file does not decode: the 1-based line where
// the parser gives one (0 when not), the field, and the problem.
type GrantError struct {
	Line    uint64
	Field   string
	Problem string
}

func (e *GrantError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "%s: ", e.Field)
	}
	b.WriteString(e.Problem)
	return b.String()
}

var (
	grantKeys = []string{"tool", "mode", "max_taint", "result_class", "untrusted", "expires", "job", "secret",
		"secret_header", "secret_format", "secret_hosts", "secret_deliver", "constraints"}
	// stringKeys hold a string each; the struct holds enums and
	// timestamps for some of them, which go-toml would fill from an integer.
	stringKeys      = []string{"tool", "mode", "max_taint", "result_class", "expires", "job", "secret", "secret_header", "secret_format", "secret_deliver"}
	requiredKeys    = []string{"tool", "mode", "max_taint"}
	constraintsKeys = []string{"paths", "hosts", "patterns"}
)

// DecodeGrant decodes a grant file strictly: unknown keys (including keys that
// differ only in case), missing required keys, wrong types and unknown enum
// strings are errors. result_class defaults to private, untrusted to true.
func DecodeGrant(data []byte) (Grant, error) {
	if !utf8.Valid(data) {
		return Grant{}, &GrantError{Problem: "the file is not valid UTF-8"}
	}
	// Pass 1: the keys exactly as written. go-toml matches struct fields
	// case-insensitively, so "Mode" would otherwise set mode.
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return Grant{}, tomlError(err, "")
	}
	if err := checkKeys(data, doc, "", grantKeys); err != nil {
		return Grant{}, err
	}
	if c, ok := doc["constraints"]; ok {
		table, ok := c.(map[string]any)
		if !ok {
			return Grant{}, &GrantError{Line: GrantKeyLine(data, "constraints"), Field: "constraints", Problem: "must be a table"}
		}
		if err := checkKeys(data, table, "constraints.", constraintsKeys); err != nil {
			return Grant{}, err
		}
	}
	if err := checkTypes(data, doc); err != nil {
		return Grant{}, err
	}
	for _, k := range requiredKeys {
		if _, ok := doc[k]; !ok {
			return Grant{}, &GrantError{Field: k, Problem: "missing required field"}
		}
	}
	// The keys and their TOML types are checked above; what is left is
	// turning the values into the struct, from the same parse.
	return grantFrom(data, doc)
}

// grantFrom builds the Grant from a document whose keys and value types
// checkKeys and checkTypes have passed. result_class defaults to private,
// untrusted to true.
func grantFrom(data []byte, doc map[string]any) (Grant, error) {
	g := Grant{Tool: doc["tool"].(string), ResultClass: Private, Untrusted: true}
	texts := []struct {
		key string
		dst interface{ UnmarshalText([]byte) error }
	}{{"mode", &g.Mode}, {"max_taint", &g.MaxTaint}, {"result_class", &g.ResultClass}}
	for _, t := range texts {
		if v, ok := doc[t.key].(string); ok {
			if err := t.dst.UnmarshalText([]byte(v)); err != nil {
				return Grant{}, &GrantError{Line: GrantKeyLine(data, t.key), Field: t.key, Problem: err.Error()}
			}
		}
	}
	if v, ok := doc["expires"].(string); ok {
		ts, err := ParseTimestamp(v)
		if err != nil {
			return Grant{}, &GrantError{Line: GrantKeyLine(data, "expires"), Field: "expires", Problem: err.Error()}
		}
		g.Expires = &ts
	}
	for _, k := range []struct {
		key string
		dst **string
	}{{"job", &g.Job}, {"secret", &g.Secret}, {"secret_header", &g.SecretHeader}, {"secret_format", &g.SecretFormat}, {"secret_deliver", &g.SecretDeliver}} {
		if v, ok := doc[k.key].(string); ok {
			*k.dst = &v
		}
	}
	g.SecretHosts = stringList(doc["secret_hosts"])
	if v, ok := doc["untrusted"].(bool); ok {
		g.Untrusted = v
	}
	table, _ := doc["constraints"].(map[string]any)
	g.Constraints.Paths = stringList(table["paths"])
	g.Constraints.Hosts = stringList(table["hosts"])
	g.Constraints.Patterns = stringList(table["patterns"])
	return g, nil
}

// stringList converts a list checkTypes has found to hold only strings.
func stringList(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil // absent
	}
	out := make([]string, len(list))
	for i, item := range list {
		out[i] = item.(string)
	}
	return out
}

func checkKeys(data []byte, table map[string]any, prefix string, allowed []string) error {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(allowed, k) {
			return &GrantError{Line: GrantKeyLine(data, k), Field: prefix + k, Problem: "unknown field"}
		}
	}
	return nil
}

// checkTypes requires strings where the struct holds enums and timestamps:
// go-toml would otherwise store a TOML integer straight into a Mode.
func checkTypes(data []byte, doc map[string]any) error {
	for _, k := range stringKeys {
		if v, ok := doc[k]; ok {
			if _, ok := v.(string); !ok {
				return &GrantError{Line: GrantKeyLine(data, k), Field: k, Problem: "must be a string"}
			}
		}
	}
	if v, ok := doc["untrusted"]; ok {
		if _, ok := v.(bool); !ok {
			return &GrantError{Line: GrantKeyLine(data, "untrusted"), Field: "untrusted", Problem: "must be true or false"}
		}
	}
	if v, ok := doc["secret_hosts"]; ok && !isStringList(v) {
		return &GrantError{Line: GrantKeyLine(data, "secret_hosts"), Field: "secret_hosts", Problem: "must be a list of strings"}
	}
	table, _ := doc["constraints"].(map[string]any)
	for _, k := range constraintsKeys {
		if v, ok := table[k]; ok && !isStringList(v) {
			return &GrantError{Line: GrantKeyLine(data, k), Field: "constraints." + k, Problem: "must be a list of strings"}
		}
	}
	return nil
}

// isStringList reports whether a decoded TOML value is an array of strings.
func isStringList(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, item := range list {
		if _, isString := item.(string); !isString {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// GrantKeyLine gives the 1-based line of the first line of a grant file
// that assigns key (bare, quoted, or dotted under constraints) or opens a
// table named key, or 0. The parser's map carries no positions, and this is
// only to point the owner at the right line: a miss gives no line, never a
// different decision.
func GrantKeyLine(data []byte, key string) uint64 {
	forms := []string{key, `"` + key + `"`, "'" + key + "'", "constraints." + key}
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimPrefix(strings.TrimSpace(line), "[")
		for _, form := range forms {
			if rest, ok := strings.CutPrefix(t, form); ok {
				rest = strings.TrimSpace(rest)
				if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "]") {
					return uint64(i + 1)
				}
			}
		}
	}
	return 0
}

func tomlError(err error, field string) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		f := field
		if k := de.Key(); len(k) > 0 {
			f = strings.Join(k, ".")
		}
		return &GrantError{Line: uint64(row), Field: f, Problem: firstLine(de.Error())}
	}
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		return tomlError(&sm.Errors[0], field)
	}
	return &GrantError{Field: field, Problem: firstLine(err.Error())}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimPrefix(s, "toml: ")
}
