package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// testConfig has every shape DecodeConfig supports: tables, a pointer to a
// table, an embedded struct (flattened), an untagged and a dropped field
// (neither settable), and values of each kind it checks itself.
type testConfig struct {
	Paths  testPaths   `toml:"paths"`
	Limits *testLimits `toml:"limits"`
	testEmbedded
	Hidden  string
	Skipped string `toml:"-"`
}

type testPaths struct {
	Home    string   `toml:"home"`
	Grants  string   `toml:"grants"`
	Verbose bool     `toml:"verbose"`
	Tags    []string `toml:"tags"`
}

type testLimits struct {
	Max   int64     `toml:"max"`
	Ratio float64   `toml:"ratio"`
	Mode  Mode      `toml:"mode"`
	Until time.Time `toml:"until"`
}

type testEmbedded struct {
	Extra string `toml:"extra"`
}

const testConfigFull = `# c.toml
extra = "e"
[paths]
home = "/srv/bx"
grants = "/srv/grants"
verbose = true
tags = ["a", "b"]

[limits]
max = 100
ratio = 0.5
mode = "ask"
until = 2026-01-02T03:04:05Z
`

func defaultTestConfig() testConfig {
	return testConfig{Paths: testPaths{Home: "/default", Grants: "/default/grants"}, Limits: &testLimits{Max: 7}}
}

func TestDecodeConfigFull(t *testing.T) {
	c := defaultTestConfig()
	if err := DecodeConfig("c.toml", []byte(testConfigFull), &c); err != nil {
		t.Fatal(err)
	}
	want := testConfig{
		Paths:        testPaths{"/srv/bx", "/srv/grants", true, []string{"a", "b"}},
		Limits:       &testLimits{100, 0.5, Ask, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		testEmbedded: testEmbedded{"e"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v %+v, want %+v %+v", c, c.Limits, want, want.Limits)
	}
}

func TestDecodeConfigKeepsDefaults(t *testing.T) {
	c := defaultTestConfig()
	if err := DecodeConfig("c.toml", []byte("[paths]\ngrants = \"/g\"\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Paths.Home != "/default" || c.Paths.Grants != "/g" || c.Limits.Max != 7 {
		t.Fatalf("got %+v %+v", c, c.Limits)
	}
	// An inline table is a table too.
	c = defaultTestConfig()
	if err := DecodeConfig("c.toml", []byte("paths = { home = \"/i\" }\nlimits.max = 3\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Paths.Home != "/i" || c.Paths.Grants != "/default/grants" || c.Limits.Max != 3 {
		t.Fatalf("got %+v %+v", c, c.Limits)
	}
}

func TestDecodeConfigRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown table", testConfigFull + "\n[limits2]\nx = 1\n", `c.toml:15: unknown key "limits2"`},
		{"unknown key", strings.Replace(testConfigFull, "grants =", "grant =", 1), `c.toml:5: unknown key "paths.grant"`},
		{"case variant key", strings.Replace(testConfigFull, "home =", "Home =", 1), `c.toml:4: unknown key "paths.Home"`},
		{"case variant table", strings.Replace(testConfigFull, "[limits]", "[Limits]", 1), `c.toml:9: unknown key "Limits"`},
		{"quoted case variant", strings.Replace(testConfigFull, "grants =", `"Grants" =`, 1), `c.toml:5: unknown key "paths.Grants"`},
		{"literal quoted key", "[paths]\n'home ' = \"/x\"\n", `c.toml:2: unknown key "paths.home "`},
		{"dotted key under a table", testConfigFull + "paths.homes = \"/x\"\n", `c.toml:14: unknown key "limits.paths"`},
		{"top-level dotted", "paths.Home = \"/x\"\n", `c.toml:1: unknown key "paths.Home"`},
		{"dotted header", "[paths.Home]\n", `c.toml:1: unknown key "paths.Home"`},
		{"inline table key", "paths = { home = \"/x\", Grants = \"/y\" }\n", `c.toml:1: unknown key "paths.Grants"`},
		{"untagged field", "Hidden = \"x\"\n", `c.toml:1: unknown key "Hidden"`},
		{"untagged field folded", "hidden = \"x\"\n", `c.toml:1: unknown key "hidden"`},
		{"dropped field", "Skipped = \"x\"\n", `c.toml:1: unknown key "Skipped"`},
		{"embedded struct by name", "[testEmbedded]\nextra = \"x\"\n", `c.toml:1: unknown key "testEmbedded"`},
		{"value for a table", "paths = 1\n", `c.toml:1: "paths" must be a table`},
		{"array for a table", "paths = [1]\n", `c.toml:1: "paths" must be a table`},
		{"table for a value", "[paths.home]\n", `c.toml:1: "paths.home" is a value, not a table`},
		{"inline table for a value", "[paths]\nhome = { x = 1 }\n", `c.toml:2: "paths.home" is a value, not a table`},
		{"under a value", "[paths]\nhome.x = 1\n", `c.toml:2: "paths.home" is a value, not a table`},
		{"array of tables", "[[paths]]\n", `c.toml:1: "paths" must be a table, not an array of tables`},
		{"array of tables for a value", "[[paths.home]]\n", `c.toml:1: "paths.home" is a value, not a table`},
		{"integer for a string", "\n[paths]\nhome = 8080\n", `c.toml:3: "paths.home" must be a string`},
		{"string for an integer", "[limits]\nmax = \"100\"\n", `c.toml:2: "limits.max" must be an integer`},
		{"float for an integer", "[limits]\nmax = 1.5\n", `c.toml:2: "limits.max" must be an integer`},
		{"string for a boolean", "[paths]\nverbose = \"yes\"\n", `c.toml:2: "paths.verbose" must be true or false`},
		{"integer for an enum", "[limits]\nmode = 1\n", `c.toml:2: "limits.mode" must be a string`},
		{"inline value kind", "limits = { max = \"1\" }\n", `c.toml:1: "limits.max" must be an integer`},
		{"list of integers", "[paths]\ntags = [1]\n", "c.toml:2: cannot decode TOML integer into struct field wire.testPaths.Tags of type string"},
		{"unknown enum", "[limits]\nmode = \"sometimes\"\n", `c.toml:2: unknown variant: unknown mode "sometimes"`},
		{"duplicate key", "[paths]\nhome = \"/a\"\nhome = \"/b\"\n", "c.toml:3: key home is already defined"},
		{"duplicate table", "[paths]\n[limits]\n[paths]\n", "c.toml:3: table paths already exists"},
		{"syntax", "[paths]\nhome = \n", "c.toml:2: unexpected character U+000A at start of value"},
		{"unclosed header", "# one\n[paths\n", "c.toml:2: expected ']' to close table name"},
		{"invalid UTF-8", "# one\n[paths]\nhome = \"\xff\"\n", "c.toml:3: the file is not valid UTF-8"},
		{"invalid UTF-8 in a comment", "\xc3", "c.toml:1: the file is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultTestConfig()
			err := DecodeConfig("c.toml", []byte(tc.text), &c)
			var ce *ConfigError
			if !errors.As(err, &ce) || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDecodeConfigRefusesUncheckableTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"not a pointer", testConfig{}, "wire: DecodeConfig needs a pointer to a struct, not wire.testConfig"},
		{"not a struct", new(int), "wire: DecodeConfig needs a pointer to a struct, not *int"},
		{"map", &struct {
			M map[string]string `toml:"m"`
		}{}, "wire: DecodeConfig: struct { M map[string]string \"toml:\\\"m\\\"\" }.M is a map, whose keys cannot be checked"},
		{"interface", &struct {
			T struct {
				A any `toml:"a"`
			} `toml:"t"`
		}{}, "wire: DecodeConfig: struct { T struct { A interface {} \"toml:\\\"a\\\"\" } \"toml:\\\"t\\\"\" }.T.A is a interface, whose keys cannot be checked"},
		{"list of tables", &struct {
			L []testPaths `toml:"l"`
		}{}, "wire: DecodeConfig: struct { L []wire.testPaths \"toml:\\\"l\\\"\" }.L is a list of tables, whose keys cannot be checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeConfig("c.toml", nil, tc.v)
			var ce *ConfigError
			if err == nil || errors.As(err, &ce) || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConfigKeyLine(t *testing.T) {
	data := []byte(testConfigFull + "[paths.sub]\n")
	inline := []byte("\n\npaths = { home = \"/x\" }\nlimits.max = 1\n")
	for _, tc := range []struct {
		data []byte
		key  string
		want int
	}{
		{data, "paths", 3},
		{data, "paths.home", 4},
		{data, "paths.tags", 7},
		{data, "limits.until", 13},
		{data, "extra", 2},
		{data, "paths.sub", 14},
		{data, "paths.ho", 0},
		{data, "absent", 0},
		{inline, "paths", 3},
		{inline, "paths.home", 3},
		{inline, "limits", 4},
		{inline, "limits.max", 4},
		{inline, "limits.ratio", 0},
		{[]byte("[paths\n"), "paths", 0},
	} {
		if got := ConfigKeyLine(tc.data, tc.key); got != tc.want {
			t.Errorf("ConfigKeyLine(%q, %q) = %d, want %d", tc.data, tc.key, got, tc.want)
		}
	}
}

func TestConfigErrorText(t *testing.T) {
	if s := (&ConfigError{File: "f.toml", Line: 3, Problem: "p"}).Error(); s != "f.toml:3: p" {
		t.Fatal(s)
	}
	if s := (&ConfigError{File: "f.toml", Problem: "p"}).Error(); s != "f.toml: p" {
		t.Fatal(s)
	}
}

// FuzzDecodeConfig: DecodeConfig reads files an owner wrote, so it must
// never panic; every error it returns is a one-line *ConfigError at a line
// of the file; and whatever it accepts passes a second, independent check
// of the keys, on go-toml's map rather than its parser: every key is a tag
// of testConfig spelled exactly, tables where tables go and values where
// values go.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(testConfigFull))
	f.Add([]byte("paths = { home = \"/i\" }\nlimits.max = 3\n"))
	f.Add([]byte("[paths]\nHome = \"/x\"\n[[limits]]\n"))
	f.Add([]byte("[paths.home]\n'extra' = \"\"\n\"paths\".\"grants\" = 1\n"))
	f.Add([]byte("[limits]\nmode = 1\nuntil = 1979-05-27\nratio = 1\n"))
	f.Add([]byte("# \xff\n[paths\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := defaultTestConfig()
		err := DecodeConfig("c.toml", data, &c)
		lines := strings.Count(string(data), "\n") + 1
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("not a *ConfigError: %T %v", err, err)
			}
			if ce.File != "c.toml" || ce.Line < 0 || ce.Line > lines || ce.Problem == "" || strings.Contains(ce.Problem, "\n") {
				t.Fatalf("bad error %+v for %d lines", ce, lines)
			}
			return
		}
		var doc map[string]any
		if err := toml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("accepted a file go-toml refuses: %v", err)
		}
		if problem := exactKeys(reflect.TypeFor[testConfig](), doc, ""); problem != "" {
			t.Fatalf("accepted %q: %s", data, problem)
		}
		for k := range doc {
			if l := ConfigKeyLine(data, k); l < 1 || l > lines {
				t.Fatalf("key %q at line %d of %d", k, l, lines)
			}
		}
	})
}

// exactKeys is the fuzz target's own check of a decoded document against
// the struct type t: it walks go-toml's map, where DecodeConfig walks the
// parser's expressions.
func exactKeys(t reflect.Type, doc map[string]any, prefix string) string {
	for k, v := range doc {
		var field *reflect.StructField
		for _, f := range reflect.VisibleFields(t) {
			tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if f.Tag.Get("toml") != "-" && tag == k && tag != "" && (f.IsExported() || f.Anonymous) {
				field = &f
				break
			}
		}
		if field == nil {
			return "unknown key " + prefix + k
		}
		ft := field.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		sub, isTable := v.(map[string]any)
		wantTable := ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]()
		switch {
		case isTable != wantTable:
			return prefix + k + ": a table where there should not be one, or none where there should"
		case isTable:
			if p := exactKeys(ft, sub, prefix+k+"."); p != "" {
				return p
			}
		}
	}
	return ""
}
