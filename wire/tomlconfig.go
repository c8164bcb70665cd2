package wire

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// The roles' config files (brokerd.toml, loopd.toml, inferproxy.toml) are
// read by one decoder, so that all three are strict in the same way. It is
// here because wire is the one package of ours every role may import.
//
// go-toml alone is not strict enough: it matches keys to struct fields
// without regard to case (so "Home" would set home), and its map carries no
// positions. The keys are therefore read a second time with go-toml's own
// parser, which gives each key its line, and compared exactly with the toml
// tags of the struct the file decodes into. A key is known only through its
// tag: an untagged field cannot be set from a file.

// ConfigError is a problem with a config file, at a line when one is known
// (Line 0 otherwise: a missing key, or a problem outside the file).
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

// DecodeConfig decodes data, the contents of file, into v, a pointer to a
// struct that already holds the defaults: keys the file leaves out keep
// them. Every key must be a toml tag of v's struct (or of a struct within
// it) spelled exactly, a table where the struct has a struct and a value
// elsewhere; strings, booleans and integers must be of that TOML type. Any
// problem is a *ConfigError naming file and, where there is one, the line;
// v may then hold part of the file, and is to be thrown away.
//
// v's struct may hold structs (tables), pointers to them, embedded structs
// (flattened, as go-toml does) and values; a map, an interface or a slice
// of structs is refused as a programming error, because the keys inside
// it could not be checked.
func DecodeConfig(file string, data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("wire: DecodeConfig needs a pointer to a struct, not %T", v)
	}
	t := rv.Elem().Type()
	if err := checkConfigType(t, t.String(), map[reflect.Type]bool{}); err != nil {
		return err
	}
	if !utf8.Valid(data) {
		return &ConfigError{File: file, Line: bytes.Count(data[:invalidUTF8At(data)], []byte("\n")) + 1, Problem: "the file is not valid UTF-8"}
	}
	// Syntax first, and duplicate keys and redefined tables, which the
	// parser alone does not see: a broken file gets go-toml's own position.
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return configTOMLError(file, err)
	}
	uses, err := configKeyUses(data)
	if err != nil {
		return configTOMLError(file, err)
	}
	for _, u := range uses {
		if problem := checkConfigKey(t, u); problem != "" {
			return &ConfigError{File: file, Line: u.line, Problem: problem}
		}
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return configTOMLError(file, err)
	}
	return nil
}

// ConfigKeyLine is the line where the dotted key (e.g. "paths.home") is
// first written, by itself or as the start of a longer key or table
// header, for pointing a problem with its value at the right line. It is 0
// when the key is not in the file (its value is a default), so it also
// tells a key left out from one set to its zero value.
func ConfigKeyLine(data []byte, dottedKey string) int {
	want := strings.Split(dottedKey, ".")
	uses, _ := configKeyUses(data)
	for _, u := range uses {
		if len(u.path) >= len(want) && slices.Equal(u.path[:len(want)], want) {
			return u.line
		}
	}
	return 0
}

// keyUse is one key as written: its full dotted path, its line, whether it
// opens a table ([a.b]) or an array of tables ([[a]]) or assigns a value,
// and for a value the TOML kind of that value.
type keyUse struct {
	path   []string
	line   int
	header bool
	array  bool
	value  unstable.Kind
}

// configKeyUses lists every key of data in document order. DecodeConfig
// calls it on a document that has parsed once already, so an error is not
// expected, but it is returned rather than ending the list quietly: a key
// left unread would be a key left unchecked.
func configKeyUses(data []byte) ([]keyUse, error) {
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
	return out, p.Error()
}

// appendKeyValue adds a key = value under prefix, and the keys of an inline
// table value under it.
func appendKeyValue(p *unstable.Parser, out []keyUse, prefix []string, kv *unstable.Node) []keyUse {
	rel, line := keyPath(p, kv.Key())
	path := append(append([]string(nil), prefix...), rel...)
	v := kv.Value()
	out = append(out, keyUse{path: path, line: line, value: v.Kind})
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

// checkConfigKey is the problem with one key as written against the struct
// type t, or "". Every step of the path must be a tag of the struct it is
// in; every step but the last must be a table.
func checkConfigKey(t reflect.Type, u keyUse) string {
	at := t
	for i, k := range u.path {
		name := strings.Join(u.path[:i+1], ".")
		f, ok := configField(at, k, map[reflect.Type]bool{})
		if !ok {
			return fmt.Sprintf("unknown key %q", name)
		}
		at = derefType(f.Type)
		last := i == len(u.path)-1
		table := isConfigTable(at)
		switch {
		case !last && !table:
			return fmt.Sprintf("%q is a value, not a table", name)
		case !last:
		case table && u.array:
			return fmt.Sprintf("%q must be a table, not an array of tables", name)
		case table && !u.header && u.value != unstable.InlineTable:
			return fmt.Sprintf("%q must be a table", name)
		case !table && (u.header || u.value == unstable.InlineTable):
			return fmt.Sprintf("%q is a value, not a table", name)
		case !table:
			if want, ok := configValueKind(at, u.value); !ok {
				return fmt.Sprintf("%q must be %s", name, want)
			}
		}
	}
	return ""
}

// configValueKind says what TOML value a field of type t takes, and whether
// kind is one. go-toml would store an integer straight into a field whose
// type reads itself from text (an enum), and its own type errors name Go
// types, not keys; the common kinds are therefore checked here. Kinds it
// does not name (floats, times, arrays) are left to go-toml's decoder.
func configValueKind(t reflect.Type, kind unstable.Kind) (string, bool) {
	if isDateTime(t) {
		return "", true
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string", kind == unstable.String
	}
	switch t.Kind() {
	case reflect.String:
		return "a string", kind == unstable.String
	case reflect.Bool:
		return "true or false", kind == unstable.Bool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer", kind == unstable.Integer
	}
	return "", true
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// isDateTime says whether t takes one of TOML's date and time values.
func isDateTime(t reflect.Type) bool {
	switch t {
	case reflect.TypeFor[time.Time](), reflect.TypeFor[toml.LocalDate](), reflect.TypeFor[toml.LocalTime](), reflect.TypeFor[toml.LocalDateTime]():
		return true
	}
	return false
}

// isConfigTable says whether a field of type t is a TOML table: a struct,
// unless it reads itself from a value (a date or time, or text).
func isConfigTable(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !isDateTime(t) && !reflect.PointerTo(t).Implements(textUnmarshaler)
}

// configField finds the field of struct type t whose toml tag is exactly
// key. Like go-toml, it looks through embedded structs without a tag name,
// after t's own fields, so that the shallower field wins; seen guards a
// struct that embeds itself.
func configField(t reflect.Type, key string, seen map[reflect.Type]bool) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct || seen[t] {
		return reflect.StructField{}, false
	}
	seen[t] = true
	var embedded []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		name, skip := configTag(f)
		switch {
		case skip:
		case f.Anonymous && name == "" && derefType(f.Type).Kind() == reflect.Struct:
			embedded = append(embedded, f)
		case (f.IsExported() || f.Anonymous) && name == key && key != "":
			return f, true
		}
	}
	for _, f := range embedded {
		if g, ok := configField(derefType(f.Type), key, seen); ok {
			return g, true
		}
	}
	return reflect.StructField{}, false
}

// configTag is a field's toml key ("" when it has none) and whether the
// tag drops it ("-").
func configTag(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("toml")
	if tag == "-" {
		return "", true
	}
	name, _, _ := strings.Cut(tag, ",")
	return name, false
}

// checkConfigType refuses a config struct with a field whose keys
// DecodeConfig could not check: a map, an interface, or a list of tables.
func checkConfigType(t reflect.Type, where string, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if _, skip := configTag(f); skip || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := derefType(f.Type)
		at := where + "." + f.Name
		if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array {
			ft = derefType(ft.Elem())
			if isConfigTable(ft) {
				return fmt.Errorf("wire: DecodeConfig: %s is a list of tables, whose keys cannot be checked", at)
			}
		}
		switch {
		case ft.Kind() == reflect.Map || ft.Kind() == reflect.Interface:
			return fmt.Errorf("wire: DecodeConfig: %s is a %s, whose keys cannot be checked", at, ft.Kind())
		case isConfigTable(ft):
			if err := checkConfigType(ft, at, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// invalidUTF8At is the offset of the first byte of data that is not UTF-8.
func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// configTOMLError turns go-toml's error into a ConfigError at its line,
// keeping only the first line of its message (the rest is a drawing of
// the line, which the owner has in the file).
func configTOMLError(file string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return &ConfigError{File: file, Line: row, Problem: firstLine(de.Error())}
	}
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		return configTOMLError(file, &sm.Errors[0])
	}
	return &ConfigError{File: file, Problem: firstLine(err.Error())}
}
