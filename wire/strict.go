package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Sentinel causes, matched with errors.Is through a *DecodeError.
var (
	ErrInvalidValue   = errors.New("invalid value")
	ErrUnknownVariant = errors.New("unknown variant")
	errMissingTag     = errors.New("missing tag")
)

// ErrorKind classifies why bytes were refused.
type ErrorKind uint8

const (
	KindSyntax         ErrorKind = iota + 1 // not JSON
	KindInvalidUTF8                         // invalid UTF-8 or a lone surrogate escape
	KindDuplicateKey                        // the same member name twice in one object
	KindUnknownField                        // a member the type does not have, including case variants
	KindNumber                              // a float, an exponent, a sign or a value out of range where an integer goes
	KindWrongType                           // a JSON value of the wrong type (a string where a number goes)
	KindUnknownVariant                      // an enum string or a tag value that is not defined
	KindInvalidValue                        // an identifier, hash or timestamp that fails validation
	KindMissingTag                          // a tagged enum whose tag is absent or not its first member
	KindTrailingData                        // bytes after the value
	KindNotCanonical                        // well formed but not the canonical encoding (order, spacing, escapes, missing fields, null)
)

var errorKindNames = [...]string{"", "syntax", "invalid_utf8", "duplicate_key", "unknown_field",
	"number", "wrong_type", "unknown_variant", "invalid_value", "missing_tag", "trailing_data", "not_canonical"}

func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) && k != 0 {
		return errorKindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// DecodeError is every error Unmarshal returns.
type DecodeError struct {
	Kind ErrorKind
	Err  error
}

func (e *DecodeError) Error() string { return "wire: " + e.Kind.String() + ": " + e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// options are shared by every encode and decode. Unknown members are errors,
// names match case-sensitively, duplicates and invalid UTF-8 are errors (the
// defaults of go-json-experiment/json), and tagged unions decode through
// their registered tables.
var options json.Options

func init() {
	// Set in init: the union tables refer back to options.
	options = json.JoinOptions(
		json.RejectUnknownMembers(true),
		jsontext.AllowDuplicateNames(false),
		jsontext.AllowInvalidUTF8(false),
		json.WithUnmarshalers(json.JoinUnmarshalers(
			json.UnmarshalFromFunc(toolResponses.unmarshalFrom),
			json.UnmarshalFromFunc(auditEvents.unmarshalFrom),
			json.UnmarshalFromFunc(decisionRecords.unmarshalFrom),
			json.UnmarshalFromFunc(logRecords.unmarshalFrom),
			json.UnmarshalFromFunc(turnEvents.unmarshalFrom),
		)),
	)
}

// Marshal encodes v compactly, fields in declared order, without HTML
// escaping. A value that cannot be written validly (a zero identifier, an
// invalid enum, invalid UTF-8) is an error, never bad output.
func Marshal(v any) ([]byte, error) {
	// The two values brokerd writes for every denied call are written
	// directly (decisionfast.go), and so is the tool request loopd writes
	// for every call (toolfast.go); they decline what they cannot write.
	switch v := v.(type) {
	case ToolRequest:
		// Room for the names, a 64-character session id, 20 digits, and
		// the escapes a JSON object as arguments usually needs.
		if out, ok := appendToolRequest(make([]byte, 0, 128+len(v.Tool)+len(v.Arguments)*5/4), v); ok {
			return out, nil
		}
	case DecisionEvent:
		if out, ok := appendDecision(make([]byte, 0, 256+len(v.Tool)+len(v.Arguments)), v); ok {
			return out, nil
		}
	case DeniedResponse:
		if out, ok := appendDenied(nil, v); ok {
			return out, nil
		}
	}
	return marshalReflect(v)
}

// marshalReflect is Marshal through the json package, for every type.
func marshalReflect(v any) ([]byte, error) {
	if err := checkUnions(reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return json.Marshal(v, options)
}

// checkUnions refuses a nil tagged union anywhere in v: encoding would write
// null, which no decoder accepts. Optional values are pointers, never
// interfaces, so a nil interface is always a mistake.
func checkUnions(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Invalid:
		return fmt.Errorf("wire: cannot encode a nil value")
	case reflect.Interface:
		if v.IsNil() {
			return fmt.Errorf("wire: a %s is missing (nil)", v.Type())
		}
		return checkUnions(v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return checkUnions(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if err := checkUnions(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.Struct, reflect.Interface, reflect.Pointer:
			for i := 0; i < v.Len(); i++ {
				if err := checkUnions(v.Index(i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Unmarshal decodes data into v and accepts only what Marshal would write for
// the result: decoding and re-encoding any accepted input gives the same bytes.
func Unmarshal(data []byte, v any) error {
	if !utf8.Valid(data) {
		return &DecodeError{KindInvalidUTF8, errors.New("input is not valid UTF-8")}
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data), options)
	raw, err := dec.ReadValue()
	if err != nil {
		return classify(err)
	}
	if off := dec.InputOffset(); off != int64(len(data)) {
		return &DecodeError{KindTrailingData, fmt.Errorf("%d bytes after the value at offset %d", int64(len(data))-off, off)}
	}
	if err := json.Unmarshal(raw, v, options); err != nil {
		return classify(err)
	}
	out, err := json.Marshal(v, options)
	if err != nil {
		return &DecodeError{KindInvalidValue, err}
	}
	if !bytes.Equal(out, data) {
		return &DecodeError{KindNotCanonical, fmt.Errorf("re-encoding differs from the input at byte %d", firstDiff(out, data))}
	}
	return nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// classify maps an error of the JSON library (or of our own unmarshalers) to
// a *DecodeError. The most specific cause wins.
func classify(err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return de
	}
	kind := KindSyntax
	var se *json.SemanticError
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		kind = KindDuplicateKey
	case strings.Contains(err.Error(), "UTF-8") || strings.Contains(err.Error(), "surrogate"):
		// jsontext exports no sentinel for these.
		kind = KindInvalidUTF8
	case errors.Is(err, json.ErrUnknownName):
		kind = KindUnknownField
	case errors.Is(err, ErrUnknownVariant):
		kind = KindUnknownVariant
	case errors.Is(err, errMissingTag):
		kind = KindMissingTag
	case errors.Is(err, ErrInvalidValue):
		kind = KindInvalidValue
	case errors.As(err, &se) && se.JSONKind == '0' && se.GoType != nil && isInteger(se.GoType):
		kind = KindNumber
	case errors.As(err, &se):
		kind = KindWrongType
	}
	return &DecodeError{kind, err}
}

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}
