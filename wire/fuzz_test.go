package wire

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// seedFrom adds every file in dir whose name has one of the prefixes.
func seedFrom(f *testing.F, dir string, prefixes ...string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		for _, p := range prefixes {
			if strings.HasPrefix(e.Name(), p) && !e.IsDir() {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 'x'})
	f.Add([]byte{0, 0x10, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		body, err := ReadFrame(r)
		if err != nil {
			return
		}
		n := binary.BigEndian.Uint32(in)
		if n == 0 || n > MaxFrame || int(n) != len(body) {
			t.Fatalf("accepted a frame of length %d with header %d", len(body), n)
		}
		if consumed := len(in) - r.Len(); consumed != 4+len(body) {
			t.Fatalf("consumed %d bytes for a %d-byte frame", consumed, len(body))
		}
	})
}

func FuzzEnvelope(f *testing.F) {
	seedFrom(f, fixtureDir, "msg-")
	seedFrom(f, rejectDir, "env-")
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := UnmarshalEnvelope(in)
		if err != nil {
			return
		}
		out, err := MarshalEnvelope(e)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", in, err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("accepted %q but it re-encodes as %q", in, out)
		}
	})
}

// FuzzEnvelopeFastPath checks that the fast path changes nothing: whatever
// it accepts the slow path accepts the same way, and UnmarshalEnvelope's
// result and error are the slow path's for every input.
func FuzzEnvelopeFastPath(f *testing.F) {
	seedFrom(f, fixtureDir, "msg-")
	seedFrom(f, rejectDir, "env-")
	for _, in := range envAccepted {
		f.Add([]byte(in))
	}
	for _, c := range envNearMisses {
		f.Add([]byte(c.in))
	}
	// tool_request bodies take their own direct decoder (toolfast.go).
	for _, b := range toolAccepted {
		f.Add(toolEnvelope(b))
	}
	for _, c := range toolNearMisses {
		f.Add(toolEnvelope(c.body))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, err := fastAgrees(in); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if err := sameAsSlow(in); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
	})
}

// FuzzRecord covers the log line types: the first byte picks the type.
func FuzzRecord(f *testing.F) {
	for _, prefix := range []string{"audit-", "log-", "turn-"} {
		entries, _ := os.ReadDir(fixtureDir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				b, _ := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
				f.Add(append([]byte{prefix[0]}, b...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		var v any
		switch in[0] % 3 {
		case 0:
			v = new(AuditRecord)
		case 1:
			v = new(LogRecord)
		default:
			v = new(TurnEvent)
		}
		if err := Unmarshal(in[1:], v); err != nil {
			return
		}
		out, err := Marshal(v)
		if err != nil || !bytes.Equal(out, in[1:]) {
			t.Fatalf("accepted %q but it re-encodes as %q (%v)", in[1:], out, err)
		}
	})
}

func FuzzGrant(f *testing.F) {
	seedFrom(f, rejectDir, "grant-")
	f.Add([]byte("tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\nuntrusted = false\nexpires = \"2027-01-01T00:00:00.000Z\"\n[constraints]\npaths = [\"/home/kyle/notes\"]\n"))
	f.Add([]byte("tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\nconstraints = { hosts = [\"*.example.com\"] }\n"))
	f.Add([]byte("tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"api-key\"\n" +
		"secret_header = \"Authorization\"\nsecret_format = \"Bearer {}\"\nsecret_hosts = [\"api.example.com\"]\n[constraints]\nhosts = [\"*.example.com\"]\n"))
	f.Add([]byte("tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"deploy_key\"\nsecret_deliver = \"file\"\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		g, err := DecodeGrant(in)
		if err != nil {
			return
		}
		if !g.Mode.Valid() || !g.MaxTaint.Valid() || !g.ResultClass.Valid() {
			t.Fatalf("accepted %q with an invalid enum: %+v", in, g)
		}
		// Whatever is accepted survives a round trip through TOML unchanged.
		out, err := toml.Marshal(g)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", in, err)
		}
		back, err := DecodeGrant(out)
		if err != nil {
			t.Fatalf("re-encoded grant %q does not decode: %v", out, err)
		}
		if !reflect.DeepEqual(normalise(back), normalise(g)) {
			t.Fatalf("round trip changed the grant:\n%+v\n%+v", g, back)
		}
	})
}

// normalise treats an absent list and an empty one as the same.
func normalise(g Grant) Grant {
	for _, l := range []*[]string{&g.Constraints.Paths, &g.Constraints.Hosts, &g.Constraints.Patterns, &g.SecretHosts} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return g
}
