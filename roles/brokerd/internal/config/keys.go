package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// go-toml matches keys to struct fields without regard to case, so "Home"
// would set home; and a decoded map carries no positions. The keys are
// therefore read a second time with go-toml's parser, which gives each key
// its line, and compared exactly with the struct tags of Config.

// keyUse is one key as written: its full dotted path, its line, and whether
// it opens a table ([a.b]), an array of tables ([[a]]), or assigns a value
// (inline is set when the value is an inline table).
type keyUse struct {
	path   []string
	line   int
	header bool
	array  bool
	inline bool
}

// keyUses lists every key of data in document order. data has already
// parsed once, so a parser error here is not expected; it ends the list.
func keyUses(data []byte) []keyUse {
	var p unstable.Parser
	p.Reset(data)
	var out []keyUse
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path, line := keyPath(&p, e.Key())
			table = path
			out = append(out, keyUse{path: path, line: line, header: true, array: e.Kind == unstable.ArrayTable})
		case unstable.KeyValue:
			out = appendKeyValue(&p, out, table, e)
		}
	}
	return out
}

// appendKeyValue adds a key = value under prefix, and the keys of an inline
// table value under it.
func appendKeyValue(p *unstable.Parser, out []keyUse, prefix []string, kv *unstable.Node) []keyUse {
	rel, line := keyPath(p, kv.Key())
	path := append(append([]string(nil), prefix...), rel...)
	v := kv.Value()
	out = append(out, keyUse{path: path, line: line, inline: v.Kind == unstable.InlineTable})
	if v.Kind == unstable.InlineTable {
		it := v.Children()
		for it.Next() {
			out = appendKeyValue(p, out, path, it.Node())
		}
	}
	return out
}

func keyPath(p *unstable.Parser, it unstable.Iterator) ([]string, int) {
	var path []string
	line := 0
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
		path = append(path, string(n.Data))
	}
	return path, line
}

// checkKeys refuses any key that is not a toml tag of the struct type t (or
// of a struct within it) spelled exactly, and a value where a table goes or
// a table where a value goes.
func checkKeys(file string, data []byte, t reflect.Type) error {
	for _, u := range keyUses(data) {
		at := t
		for i, k := range u.path {
			name := strings.Join(u.path[:i+1], ".")
			f, ok := field(at, k)
			if !ok {
				return &Error{File: file, Line: u.line, Problem: fmt.Sprintf("unknown key %q", name)}
			}
			at = deref(f.Type)
			last := i == len(u.path)-1
			isTable := at.Kind() == reflect.Struct
			switch {
			case !last && !isTable:
				return &Error{File: file, Line: u.line, Problem: fmt.Sprintf("%q is a value, not a table", name)}
			case last && u.array:
				return &Error{File: file, Line: u.line, Problem: fmt.Sprintf("%q must be a table, not an array of tables", name)}
			case last && isTable && !u.header && !u.inline:
				return &Error{File: file, Line: u.line, Problem: fmt.Sprintf("%q must be a table", name)}
			case last && !isTable && (u.header || u.inline):
				return &Error{File: file, Line: u.line, Problem: fmt.Sprintf("%q is a value, not a table", name)}
			}
		}
	}
	return nil
}

// field finds the struct field whose toml tag is exactly key.
func field(t reflect.Type, key string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && tagName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// tagName is a field's toml key; a field without a tag has none, so it
// cannot be set from the file.
func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// lineOf is the line where the dotted key is first written (or its table
// opened), for pointing a problem with its value at the right line; 0 if it
// is not in the file (a default, or a problem with the environment).
func lineOf(data []byte, key string) int {
	for _, u := range keyUses(data) {
		if strings.Join(u.path, ".") == key {
			return u.line
		}
	}
	return 0
}
