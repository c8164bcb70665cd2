package redact_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"boxmaker/roles/brokerd/internal/redact"
)

// v has characters that base64 and base64url write differently (+ and /,
// - and _), that url.QueryEscape and url.PathEscape treat differently (@,
// +, space), and one both keep (~).
const v = "p@ss w/rd+k?y~1"

// TestRedact is the table: each form, wrapped and not, and the edge cases.
// The wanted outputs are written out by hand; where v sits inside a longer
// base64 stream, the characters it shares with its neighbours stay.
func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		what        string
		name, value string
		text, want  string
	}{
		{"exact", "api", v, "key=" + v + "\n", "key=[secret:api]\n"},
		{"exact, twice", "api", v, v + " and " + v, "[secret:api] and [secret:api]"},
		{"exact, broken by a space: not an encoded form", "api", "password", "pass word", "pass word"},

		// base64 of v: at offset 0 it is 20 characters, no padding.
		{"base64, whole", "api", v, "cEBzcyB3L3JkK2s/eX4x", "[secret:api]"},
		{"base64url, whole", "api", v, "cEBzcyB3L3JkK2s_eX4x", "[secret:api]"},
		// echo "$v" | base64: the newline after v shares "Cg==".
		{"base64 of v and a newline", "api", v, "cEBzcyB3L3JkK2s/eX4xCg==\n", "[secret:api]Cg==\n"},
		// printf x; echo "$v": offset 1, "eH" mixes x with v, "Q" v's last
		// bits with the newline's first, which are zero: it reads as v's
		// unpadded end and goes too.
		{"base64 at offset 1", "api", v, "eHBAc3Mgdy9yZCtrP3l+MQo=", "eH[secret:api]o="},
		{"base64url at offset 1", "api", v, "eHBAc3Mgdy9yZCtrP3l-MQo", "eH[secret:api]o"},
		{"base64 at offset 2", "api", v, "eHlwQHNzIHcvcmQraz95fjEK", "eHl[secret:api]K"},
		{"base64 at offset 2, a byte with high bits after", "api", v, "eHlwQHNzIHcvcmQraz95fjH/", "eHl[secret:api]H/"},
		// v at the end of the stream at offset 1: "M" and the padding are v's alone.
		{"base64 at offset 1, v ends the stream, padded", "api", v, "eHBAc3Mgdy9yZCtrP3l+MQ==", "eH[secret:api]"},
		{"base64 at offset 1, v ends the stream, unpadded", "api", v, "eHBAc3Mgdy9yZCtrP3l+MQ and more", "eH[secret:api] and more"},
		{"base64 wrapped at 8 columns with CRLF", "api", v, "cEBzcyB3\r\nL3JkK2s/\r\neX4x\r\n", "[secret:api]\r\n"},
		{"base64 with spaces and tabs anywhere", "api", v, "c E\tBzcyB3L3  JkK2s/eX4 x", "[secret:api]"},
		{"whitespace around a form is kept", "api", v, "  cEBzcyB3L3JkK2s/eX4x \n", "  [secret:api] \n"},

		{"hex", "api", v, "7040737320772f72642b6b3f797e31", "[secret:api]"},
		{"HEX", "api", v, "7040737320772F72642B6B3F797E31", "[secret:api]"},
		{"Hex, mixed case, wrapped", "api", v, "7040737320772F7\n2642b6B3F797e31\n", "[secret:api]\n"},
		{"hex inside a longer dump", "api", v, "0a7040737320772f72642b6b3f797e310a", "0a[secret:api]0a"},
		{"od -An -tx1 style", "api", v, " 70 40 73 73 20 77 2f 72\n 64 2b 6b 3f 79 7e 31\n", " [secret:api]\n"},

		{"every byte %XX", "api", v, "q=%70%40%73%73%20%77%2F%72%64%2B%6B%3F%79%7E%31&x", "q=[secret:api]&x"},
		{"every byte %xx", "api", v, "q=%70%40%73%73%20%77%2f%72%64%2b%6b%3f%79%7e%31&x", "q=[secret:api]&x"},
		{"url.QueryEscape", "api", v, "q=p%40ss+w%2Frd%2Bk%3Fy~1&x", "q=[secret:api]&x"},
		{"url.QueryEscape, lower-case escapes", "api", v, "q=p%40ss+w%2frd%2bk%3fy~1&x", "q=[secret:api]&x"},
		{"url.PathEscape", "api", v, "/p@ss%20w%2Frd+k%3Fy~1/x", "/[secret:api]/x"},
		{"url.QueryEscape wrapped", "api", v, "p%40ss+w%2\nFrd%2Bk%3Fy~1", "[secret:api]"},

		// Overlapping occurrences are one marker; touching ones are two.
		{"overlapping", "k", "abab", "xababab y", "x[secret:k] y"},
		{"touching", "k", "abcd", "abcdabcd", "[secret:k][secret:k]"},
		{"overlapping base64", "k", "aaaaaa", "YWFhYWFhYWFh", "[secret:k]"},
		{"exact beside its hex, wrapped", "k", "cafe", "cafe636166 65", "[secret:k][secret:k]"},

		// The minimum: a 1-byte value's forms are all under 4 characters,
		// so only its exact bytes go; a 2-byte value's hex (4) and %XX
		// (6) go, its base64 runs (2 characters) do not.
		{"1 byte: exact only", "k", "A", "A 41 QQ== %41", "[secret:k] 41 QQ== %41"},
		{"2 bytes: hex and %XX, not base64", "k", "hi", "hi 6869 aGk= %68%69", "[secret:k] [secret:k] aGk= [secret:k]"},
		// 3 bytes: base64 at offset 0 is 4 characters and goes; at offsets
		// 1 and 2 the runs are 3 ("x" then "abc" is eGFiYw==: "FiY").
		{"3 bytes: base64 at offset 0, not 1", "k", "abc", "YWJj eGFiYw==", "[secret:k] eGFiYw=="},
		// Hex and %XX with no digit to anchor on: short, and long.
		{"hex all letters, short", "k", "\xaa\xbb", "AaBb %AA%bB", "[secret:k] [secret:k]"},
		{"hex all letters, long", "k", strings.Repeat("\xaa", 16), "x " + strings.Repeat("aA", 16) + " y", "x [secret:k] y"},

		// The marker's own text.
		{"value in the marker", "k", "secret", "my secret", "my [secret:k]"},
		{"value in the marker, a marker in the text", "k", "secret", "[secret:k] secret", "[secret:k] [secret:k]"},
		{"value [", "k", "[", "a[b[", "a[secret:k]b[secret:k]"},
		{"hex form in the name", "DEADBEEF", "\xde\xad\xbe\xef", "deadbeef [secret:DEADBEEF]", "[secret:DEADBEEF] [secret:DEADBEEF]"},
		// "]x" then "x": the first marker's ']' meets the second x.
		{"a replacement making an occurrence", "k", "]x", "]xx.", "[secret:k]."},
		{"a value holding the marker", "k", "a[secret:k]b", "aa[secret:k]bb.", "[secret:k]."},
		// Built so that each pass makes one more: withheld whole.
		{"a chain past the bound", "k", "]x", "]xxxxxxxxxx tail", "[secret:k]"},
		{"a name outside [A-Za-z0-9._-]", "a b]\n", "xyz", "xyz", "[secret:a_b__]"},

		// UTF-8: a binary value can match inside a character.
		{"value a continuation byte", "k", "\xa9", "caf\xc3\xa9!", "caf[secret:k]!"},
		{"value a lead byte", "k", "\xc3", "\xc3\xa9!", "[secret:k]!"},
		{"invalid UTF-8 around", "k", "\xff\xfe", "\xfd\xff\xfe\xfd", "\xfd[secret:k]\xfd"},
		{"empty value", "k", "", "anything", "anything"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			r := redact.New(tc.name, []byte(tc.value))
			got := r.String(tc.text)
			if got != tc.want {
				t.Fatalf("String(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
			if b := r.Bytes([]byte(tc.text)); string(b) != tc.want {
				t.Fatalf("Bytes(%q) = %q, String gave %q", tc.text, b, got)
			}
			if again := r.String(got); again != got {
				t.Fatalf("not idempotent: %q then %q", got, again)
			}
			if utf8.ValidString(tc.text) && !utf8.ValidString(got) {
				t.Fatalf("valid UTF-8 %q became invalid %q", tc.text, got)
			}
		})
	}
}

// TestForms: the list the coordinator's leak scan uses has the exact bytes
// first and every encoded form, and skips the short ones.
func TestForms(t *testing.T) {
	got := func(value string) []string {
		var out []string
		for _, f := range redact.New("k", []byte(value)).Forms() {
			out = append(out, string(f))
		}
		return out
	}
	fs := got(v)
	if fs[0] != v {
		t.Fatalf("first form %q, want the exact bytes", fs[0])
	}
	for _, want := range []string{
		"cEBzcyB3L3JkK2s/eX4x", "cEBzcyB3L3JkK2s_eX4x", // offset 0
		"BAc3Mgdy9yZCtrP3l+M", "BAc3Mgdy9yZCtrP3l-M", "BAc3Mgdy9yZCtrP3l+MQ==", "BAc3Mgdy9yZCtrP3l+MQ", // offset 1
		"wQHNzIHcvcmQraz95fj", "wQHNzIHcvcmQraz95fjE=", "wQHNzIHcvcmQraz95fjE", // offset 2
		"7040737320772f72642b6b3f797e31", "7040737320772F72642B6B3F797E31",
		"%70%40%73%73%20%77%2f%72%64%2b%6b%3f%79%7e%31", "%70%40%73%73%20%77%2F%72%64%2B%6B%3F%79%7E%31",
		"p%40ss+w%2Frd%2Bk%3Fy~1", "p%40ss+w%2frd%2bk%3fy~1", "p@ss%20w%2Frd+k%3Fy~1", "p@ss%20w%2frd+k%3fy~1",
	} {
		if !slices.Contains(fs, want) {
			t.Errorf("Forms() lacks %q", want)
		}
	}
	if f := got("A"); !slices.Equal(f, []string{"A"}) {
		t.Errorf("Forms() of a 1-byte value = %q, want the exact bytes alone", f)
	}
	if f := got(""); len(f) != 0 {
		t.Errorf("Forms() of an empty value = %q", f)
	}
	// A value that only needs no escaping has no percent form of its own.
	for _, f := range got("password") {
		if f != "password" && strings.Contains(f, "password") {
			t.Errorf("Forms() has %q, the exact bytes again", f)
		}
	}
	// Forms are copies.
	r := redact.New("k", []byte(v))
	r.Forms()[0][0] = 'X'
	if r.String(v) != "[secret:k]" {
		t.Fatal("changing what Forms returned changed the Redactor")
	}
}

// TestBytesCopies: Bytes returns a new slice even when nothing matched, so
// that a caller writing into the result does not write into its input.
func TestBytesCopies(t *testing.T) {
	in := []byte("nothing here")
	out := redact.New("k", []byte(v)).Bytes(in)
	out[0] = 'X'
	if !bytes.Equal(in, []byte("nothing here")) {
		t.Fatal("Bytes returned its input")
	}
}
