package redact_test

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"boxmaker/roles/brokerd/internal/redact"
)

// markerName is the name as New documents it shows in the marker.
func markerName(name string) string {
	b := []byte(name)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// FuzzRedact: any secret, any text. No panic; no form is left outside a
// marker (found by the naive oracle's matcher, not the package's);
// redacting the result changes nothing; valid UTF-8 stays valid; and,
// unless the text was withheld whole, the result is the oracle's.
func FuzzRedact(f *testing.F) {
	f.Add("api", []byte(v), []byte("key="+v+" b64=cEBzcyB3L3JkK2s/eX4x\nhex=7040737320772F7\n2642b6B3F797e31"))
	f.Add("k", []byte("]x"), []byte("]xxx [secret:k]x"))
	f.Add("secret", []byte("secret"), []byte("[secret:secret] secret [secret:secr"))
	f.Add("k", []byte("\xa9"), []byte("caf\xc3\xa9 \xff\xa9"))
	f.Add("k", []byte("aaaaaa"), []byte("YWFhYWFhYWFh YW FhY\nWFh"))
	f.Add("k", []byte("hi"), []byte("6869 %68%69 aGk="))
	f.Fuzz(func(t *testing.T, name string, value, text []byte) {
		if len(value) > 64 || len(text) > 2048 {
			return // the oracle is slow; length adds nothing the rest does not
		}
		r := redact.New(name, value)
		got := r.Bytes(text)
		marker := "[secret:" + markerName(name) + "]"
		fs := oracleForms(value)
		for _, m := range oracleMatches(got, fs) {
			if !insideMarker(got, marker, m) {
				t.Fatalf("form left at %v in %q", m, got)
			}
		}
		if again := r.Bytes(got); !bytes.Equal(again, got) {
			t.Fatalf("not idempotent:\n%q\n%q", got, again)
		}
		if utf8.Valid(text) && !utf8.Valid(got) {
			t.Fatalf("valid UTF-8 became invalid: %q", got)
		}
		if r.String(string(text)) != string(got) {
			t.Fatal("String and Bytes differ")
		}
		if want, passes := oracleRedact(text, markerName(name), fs); passes <= 4 && !bytes.Equal(got, want) {
			t.Fatalf("\n got %q\nwant %q", got, want)
		}
	})
}

// insideMarker reports whether m lies inside an occurrence of marker in t.
func insideMarker(t []byte, marker string, m [2]int) bool {
	for i := max(0, m[1]-len(marker)); i <= m[0] && i+len(marker) <= len(t); i++ {
		if string(t[i:i+len(marker)]) == marker {
			return true
		}
	}
	return false
}
