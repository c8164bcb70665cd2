package fakellama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// llama-server builds its answers with nlohmann::ordered_json: keys come out
// in the order the code inserts them, compact, with no HTML escaping, and a
// double with an integral value prints as "2000.0". The fake writes its JSON
// with this small writer so the bytes a client sees have that shape, rather
// than Go's (sorted map keys, "\u003c" for "<", "2000").

// field is one key and value of an object.
type field struct {
	k string
	v any
}

// object is a JSON object whose keys keep their order.
type object []field

func writeValue(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		writeString(b, v)
	case *string:
		if v == nil {
			b.WriteString("null")
		} else {
			writeString(b, *v)
		}
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		writeFloat(b, v)
	case json.RawMessage:
		if err := json.Compact(b, v); err != nil {
			b.WriteString("null")
		}
	case object:
		b.WriteByte('{')
		for i, f := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, f.k)
			b.WriteByte(':')
			writeValue(b, f.v)
		}
		b.WriteByte('}')
	case []object:
		writeArray(b, v)
	case []any:
		writeArray(b, v)
	default:
		// A programming error in the fake, not a client's doing.
		panic(fmt.Sprintf("fakellama: cannot encode %T", v))
	}
}

func writeArray[T any](b *bytes.Buffer, v []T) {
	b.WriteByte('[')
	for i, e := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		writeValue(b, e)
	}
	b.WriteByte(']')
}

// writeString writes s as nlohmann's dump does: UTF-8 as it is, control
// characters escaped, invalid bytes replaced by U+FFFD.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString("\ufffd")
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
		i++
	}
	b.WriteByte('"')
}

func writeFloat(b *bytes.Buffer, f float64) {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	b.WriteString(s)
}
