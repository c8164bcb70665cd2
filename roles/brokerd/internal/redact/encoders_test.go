package redact_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/redact"
)

// key is the value in testdata/key.txt (which ends with a newline, as a
// file written with echo does).
const key = "bxk_live_9fQ2mZ7rT4wY8nL1pK6vH3s"

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncoderOutputs: what busybox (the tool image's) prints for the secret
// file, made by testdata/make.sh, which also checks that coreutils' base64
// and vim's xxd print the same. What stays is what the value shares with
// its neighbours: the newline, the bytes before it, the rest of the file.
func TestEncoderOutputs(t *testing.T) {
	bin := string(readTestdata(t, "bin.key"))
	for _, tc := range []struct{ file, value, want string }{
		// cat key.txt: the value as it is.
		{"key.txt", key, "[secret:key]\n"},
		// cat key.txt | base64: "K" mixes the value's last bits with the newline.
		{"b64-nl.bb", key, "[secret:key]K\n"},
		{"b64-off1.bb", key, "eG[secret:key]Cg==\n"},
		{"b64-off2.bb", key, "eHl[secret:key]o=\n"},
		// base64 wraps at 76: the value's run crosses the line break.
		{"b64-long.bb", key, "Y29uZmlnOiByZWdpb249ZXUtd2VzdC0xIHRpbWVvdXQ9MzBzCnRva2VuPW[secret:key]CnJldHJpZXM9NSBiYWNrb2ZmPWV4cG9uZW50aWFsCg==\n"},
		{"b64-bin.bb", bin, "[secret:key]\n"},
		// xxd -p wraps at 60: 64 hex characters span two lines.
		{"xxd-nl.bb", key, "[secret:key]0a\n"},
		{"xxd-off1.bb", key, "78[secret:key]0a\n"},
		{"xxd-off2.bb", key, "7879[secret:key]0a\n"},
		{"xxd-long.bb", key, "636f6e6669673a20726567696f6e3d65752d776573742d312074696d656f\n75743d3330730a746f6b656e3d[secret:key]0a726574726965733d35206261636b\n6f66663d6578706f6e656e7469616c0a\n"},
		{"xxd-bin.bb", bin, "[secret:key]\n"},
		// od -An -tx1: hex bytes with spaces between and a line break.
		{"od.bb", key, " [secret:key]\n 0a\n"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			text := readTestdata(t, tc.file)
			got := redact.New("key", []byte(tc.value)).Bytes(text)
			if string(got) != tc.want {
				t.Fatalf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestNotCaught documents what redaction does not find, on purpose: the
// value reversed (rev), cut into lines shorter than itself (fold, or a
// dump's text column), and hex dumps whose lines carry offsets and text
// between the value's pieces. Any transformation the model can name
// defeats a list of encodings, so these are NOT redacted: the defence is
// the taint rule (a grant with a secret has result_class = "secret", the
// session rises to secret, and no grant below secret applies any more).
// If a change starts catching one of these, move it to TestEncoderOutputs;
// do not read this test as a promise that they leak.
func TestNotCaught(t *testing.T) {
	r := redact.New("key", []byte(key))
	for _, file := range []string{"rev.bb", "fold.bb", "xxd-dump.bb", "hexdump.bb"} {
		text := readTestdata(t, file)
		if got := r.Bytes(text); !bytes.Equal(got, text) {
			t.Errorf("%s: redaction now catches it: %q", file, got)
		}
	}
	// Split across lines by hand: two halves, each shorter than any form.
	split := key[:16] + "\n" + key[16:] + "\n"
	if got := r.String(split); got != split {
		t.Errorf("a value split across lines: %q", got)
	}
}

// TestWrappedStreams: the value at every offset of a longer stream, with
// encoding/base64 wrapped at 76 columns and hex wrapped at 60 as xxd -p
// does, in a longer tool output. One marker replaces it, and the result is
// the oracle's.
func TestWrappedStreams(t *testing.T) {
	bin := readTestdata(t, "bin.key")
	for _, value := range [][]byte{[]byte(key), bin} {
		for pre := range 7 {
			for suf := range 4 {
				stream := append(append(bytes.Repeat([]byte{0xa5}, pre), value...), bytes.Repeat([]byte("\n"), suf)...)
				for _, enc := range []string{"base64", "hex"} {
					var s string
					width := 76
					if enc == "base64" {
						s = base64.StdEncoding.EncodeToString(stream)
					} else {
						s, width = hex.EncodeToString(stream), 60
					}
					var text strings.Builder
					text.WriteString("$ cat /run/secret | " + enc + "\n")
					for i := 0; i < len(s); i += width {
						text.WriteString(s[i:min(i+width, len(s))] + "\n")
					}
					text.WriteString("$ echo done\ndone\n")
					in := []byte(text.String())
					got := redact.New("key", value).Bytes(in)
					want, _ := oracleRedact(in, "key", oracleForms(value))
					what := fmt.Sprintf("%s, %d bytes before, %d after", enc, pre, suf)
					if !bytes.Equal(got, want) {
						t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
					}
					if n := bytes.Count(got, []byte("[secret:key]")); n != 1 {
						t.Fatalf("%s: %d markers in %q", what, n, got)
					}
				}
			}
		}
	}
}
