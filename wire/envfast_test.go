package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// envBase is a canonical envelope; the near-misses below each change one thing.
const envBase = `{"v":1,"id":7,"final":true,"msg":{"kind":"ok","body":{}}}`

// envNearMisses are inputs a byte matcher could wrongly accept, with the
// error kind UnmarshalEnvelope gave before the fast path existed.
var envNearMisses = []struct{ name, in, want string }{
	{"leading zero id", `{"v":1,"id":07,"final":true,"msg":{"kind":"ok","body":{}}}`, "syntax"},
	{"zero id with a leading zero", `{"v":1,"id":00,"final":true,"msg":{"kind":"ok","body":{}}}`, "syntax"},
	{"v 2", `{"v":2,"id":7,"final":true,"msg":{"kind":"ok","body":{}}}`, "bad_version"},
	{"v 01", `{"v":01,"id":7,"final":true,"msg":{"kind":"ok","body":{}}}`, "syntax"},
	{"id overflow", `{"v":1,"id":18446744073709551616,"final":true,"msg":{"kind":"ok","body":{}}}`, "number"},
	{"id far overflow", `{"v":1,"id":99999999999999999999,"final":true,"msg":{"kind":"ok","body":{}}}`, "number"},
	{"id negative", `{"v":1,"id":-7,"final":true,"msg":{"kind":"ok","body":{}}}`, "number"},
	{"id missing", `{"v":1,"id":,"final":true,"msg":{"kind":"ok","body":{}}}`, "syntax"},
	{"trailing space", envBase + " ", "trailing_data"},
	{"trailing brace", envBase + "}", "trailing_data"},
	{"leading space", " " + envBase, "not_canonical"},
	{"uppercase kind", `{"v":1,"id":7,"final":true,"msg":{"kind":"OK","body":{}}}`, "unknown_variant"},
	{"unknown kind", `{"v":1,"id":7,"final":true,"msg":{"kind":"okay","body":{}}}`, "unknown_variant"},
	{"escaped kind", `{"v":1,"id":7,"final":true,"msg":{"kind":"o\u006b","body":{}}}`, "not_canonical"},
	{"escaped underscore in kind", `{"v":1,"id":7,"final":true,"msg":{"kind":"check\u005fgrants","body":{}}}`, "not_canonical"},
	{"missing final", `{"v":1,"id":7,"msg":{"kind":"ok","body":{}}}`, "not_canonical"},
	{"final True", `{"v":1,"id":7,"final":True,"msg":{"kind":"ok","body":{}}}`, "syntax"},
	{"final as a string", `{"v":1,"id":7,"final":"true","msg":{"kind":"ok","body":{}}}`, "wrong_type"},
	{"space in body", `{"v":1,"id":7,"final":true,"msg":{"kind":"ok","body":{ }}}`, "not_canonical"},
	{"body of another kind", `{"v":1,"id":7,"final":true,"msg":{"kind":"approve","body":{}}}`, "not_canonical"},
	{"body not closed", `{"v":1,"id":7,"final":true,"msg":{"kind":"ok","body":{}}`, "syntax"},
	{"body with a brace too many", `{"v":1,"id":7,"final":true,"msg":{"kind":"ok","body":{}}}}`, "trailing_data"},
	{"empty", ``, "syntax"},
	{"invalid UTF-8 in body", `{"v":1,"id":7,"final":true,"msg":{"kind":"say","body":{"session":null,"text":"` + "\xff" + `"}}}`, "invalid_utf8"},
}

// envAccepted are canonical envelopes at the edges of the matcher, which the
// fast path must take.
var envAccepted = []string{
	envBase,
	`{"v":1,"id":0,"final":false,"msg":{"kind":"ok","body":{}}}`,
	`{"v":1,"id":18446744073709551615,"final":true,"msg":{"kind":"ok","body":{}}}`,
	`{"v":1,"id":1,"final":true,"msg":{"kind":"say","body":{"session":null,"text":"\"}}"}}}`,
}

// sameAsSlow checks that UnmarshalEnvelope returns for in exactly what the
// slow path alone returns: the envelope, and the error's type and text.
func sameAsSlow(in []byte) error {
	got, gotErr := UnmarshalEnvelope(in)
	want, wantErr := slowEnvelope(in)
	if fmt.Sprintf("%T %v", gotErr, gotErr) != fmt.Sprintf("%T %v", wantErr, wantErr) {
		return fmt.Errorf("error %v, the slow path's %v", gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotErr, wantErr) {
		return fmt.Errorf("error %#v, the slow path's %#v", gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("envelope %+v, the slow path's %+v", got, want)
	}
	return nil
}

// fastAgrees checks that when the fast path accepts in, the slow path
// accepts it too with the same envelope.
func fastAgrees(in []byte) (accepted bool, err error) {
	fast, ok := fastEnvelope(in)
	if !ok {
		return false, nil
	}
	slow, slowErr := slowEnvelope(in)
	if slowErr != nil {
		return true, fmt.Errorf("the fast path accepted what the slow path refuses: %v", slowErr)
	}
	if !reflect.DeepEqual(fast, slow) {
		return true, fmt.Errorf("fast path %+v, slow path %+v", fast, slow)
	}
	return true, nil
}

func TestFastEnvelopeDeclinesNearMisses(t *testing.T) {
	for _, c := range envNearMisses {
		in := []byte(c.in)
		if _, ok := fastEnvelope(in); ok {
			t.Errorf("%s: the fast path accepted %q", c.name, in)
		}
		if got := rejectResult("env-", in); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if err := sameAsSlow(in); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestFastEnvelopeTakesCanonical makes sure the fast path is the one taken
// for every canonical envelope, not a path that always declines.
func TestFastEnvelopeTakesCanonical(t *testing.T) {
	inputs := append([]string(nil), envAccepted...)
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "msg-") {
			b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, string(b))
		}
	}
	for _, in := range inputs {
		accepted, err := fastAgrees([]byte(in))
		if !accepted {
			t.Errorf("the fast path declined %q", in)
		}
		if err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}
