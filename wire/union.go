package wire

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Tagged enums. Internally tagged ones ({"status":"result",...}) are Go
// interfaces whose variants are structs; each variant writes its own tag
// first (its MarshalJSONTo encodes the variant's fields inlined after a tag
// field, in one pass), and decoding reads the tag, which must be the first
// member, and decodes the rest into the variant it names (union.decode).

// union is the decoding table of one internally tagged enum with interface T.
type union[T any] struct {
	what     string
	tag      string
	variants map[string]func([]byte) (T, error)
}

// as decodes an object without its tag into variant type V.
func as[V any, T any](body []byte) (T, error) {
	var v V
	var zero T
	if err := json.Unmarshal(body, &v, options); err != nil {
		return zero, err
	}
	t, ok := any(v).(T)
	if !ok {
		return zero, fmt.Errorf("%w: %T is not a variant", ErrInvalidValue, v)
	}
	return t, nil
}

func (u union[T]) decode(raw []byte) (T, error) {
	var zero T
	name, body, err := splitTag(raw, u.tag)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", u.what, err)
	}
	dec, ok := u.variants[name]
	if !ok {
		return zero, fmt.Errorf("%w: %s %q", ErrUnknownVariant, u.what, name)
	}
	return dec(body)
}

func (u union[T]) unmarshalFrom(d *jsontext.Decoder, p *T) error {
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	v, err := u.decode(raw)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// splitTag reads the first member of the object raw, which must be named tag
// and hold a string, and returns that string and the object without it.
func splitTag(raw []byte, tag string) (string, []byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), options)
	tok, err := dec.ReadToken()
	if err != nil {
		return "", nil, err
	}
	if tok.Kind() != '{' {
		return "", nil, fmt.Errorf("%w: expected an object with %q first, got %s", errMissingTag, tag, tok.Kind())
	}
	key, err := dec.ReadToken()
	if err != nil {
		return "", nil, err
	}
	if key.Kind() != '"' || key.String() != tag {
		return "", nil, fmt.Errorf("%w: the first member must be %q", errMissingTag, tag)
	}
	val, err := dec.ReadToken()
	if err != nil {
		return "", nil, err
	}
	if val.Kind() != '"' {
		return "", nil, fmt.Errorf("%w: %q must be a string", errMissingTag, tag)
	}
	rest := bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")
	switch {
	case len(rest) > 0 && rest[0] == ',':
		body := make([]byte, 0, len(rest))
		body = append(body, '{')
		return val.String(), append(body, rest[1:]...), nil
	case len(rest) > 0 && rest[0] == '}':
		return val.String(), []byte("{}"), nil
	}
	return "", nil, fmt.Errorf("%w: malformed object after %q", errMissingTag, tag)
}
