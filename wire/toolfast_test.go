package wire

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// toolEnvPrefix is a canonical envelope's up to a tool_request's body, as in
// the fixture msg-tool_request.json.
const toolEnvPrefix = `{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":`

// toolEnvelope wraps a tool_request body in a canonical envelope.
func toolEnvelope(body string) []byte { return []byte(toolEnvPrefix + body + "}}") }

// fixtureToolBody is the body of the fixture msg-tool_request.json, and the
// whole fixture.
func fixtureToolBody(tb testing.TB) (body, fixture []byte) {
	fixture, err := os.ReadFile(filepath.Join(fixtureDir, "msg-tool_request.json"))
	if err != nil {
		tb.Fatal(err)
	}
	body, ok := bytes.CutPrefix(fixture, []byte(toolEnvPrefix))
	if body, ok2 := bytes.CutSuffix(body, []byte("}}")); ok && ok2 {
		return body, fixture
	}
	tb.Fatalf("the fixture %s is not a tool_request with id 7, final", fixture)
	return nil, nil
}

// toolBody is a canonical body with tool and arguments as given, quoted.
func toolBody(tool, args string) string {
	return `{"session":"chat-1","call":3,"tool":"` + tool + `","arguments":"` + args + `"}`
}

// toolAccepted are canonical bodies at the edges of decodeToolRequest,
// escapes included, which it must decode.
var toolAccepted = []string{
	toolBody("read_file", `{\"path\":\"/a\"}`),
	toolBody(`\u0000`, `\"\\`),
	toolBody(`\b\f\n\r\t`, `\u0001\u001f`),
	toolBody("\x7f é ☃ 🙂", "\u2028\u2029 <&> \ufffd"),
	toolBody("", ""),
	toolBody(`\\\"`, `\\`),
	`{"session":"0","call":0,"tool":"t","arguments":"{}"}`,
	`{"session":"` + strings.Repeat("a-9", 21) + `z","call":18446744073709551615,"tool":"t","arguments":"{}"}`,
}

// toolNearMisses are bodies a direct decoder could wrongly accept, with the
// error kind UnmarshalEnvelope gives for them in an envelope.
var toolNearMisses = []struct{ name, body, want string }{
	{"NUL unescaped", toolBody("\x00", "{}"), "syntax"},
	{"quote as \\u0022", toolBody(`\u0022`, "{}"), "not_canonical"},
	{"backslash as \\u005c", toolBody("t", `\u005c`), "not_canonical"},
	{"escaped slash", toolBody("t", `{\"path\":\"\/a\"}`), "not_canonical"},
	{"é escaped", toolBody(`\u00e9`, "{}"), "not_canonical"},
	{"uppercase hex escape", toolBody(`\u001F`, "{}"), "not_canonical"},
	{"tab as \\u0009", toolBody("t", `\u0009`), "not_canonical"},
	{"backspace as \\u0008", toolBody(`\u0008`, "{}"), "not_canonical"},
	{"U+2028 escaped", toolBody("t", `\u2028`), "not_canonical"},
	{"< escaped", toolBody("t", `\u003c`), "not_canonical"},
	{"surrogate pair", toolBody("t", `\ud83d\ude42`), "not_canonical"},
	{"lone surrogate", toolBody("t", `\ud800`), "invalid_utf8"},
	{"invalid UTF-8 in tool", toolBody("\xff", "{}"), "invalid_utf8"},
	{"invalid UTF-8 in session", `{"session":"a` + "\xc3" + `","call":3,"tool":"t","arguments":"{}"}`, "invalid_utf8"},
	{"invalid escape", toolBody(`\x41`, "{}"), "syntax"},
	{"short escape", toolBody("t", `\u12`), "syntax"},
	{"string not closed", `{"session":"chat-1","call":3,"tool":"t","arguments":"x\"}`, "syntax"},
	{"leading zero call", `{"session":"chat-1","call":03,"tool":"t","arguments":"{}"}`, "syntax"},
	{"call 00", `{"session":"chat-1","call":00,"tool":"t","arguments":"{}"}`, "syntax"},
	{"call overflow", `{"session":"chat-1","call":18446744073709551616,"tool":"t","arguments":"{}"}`, "number"},
	{"call negative", `{"session":"chat-1","call":-3,"tool":"t","arguments":"{}"}`, "number"},
	{"call float", `{"session":"chat-1","call":3.0,"tool":"t","arguments":"{}"}`, "number"},
	{"call exponent", `{"session":"chat-1","call":3e0,"tool":"t","arguments":"{}"}`, "number"},
	{"call string", `{"session":"chat-1","call":"3","tool":"t","arguments":"{}"}`, "wrong_type"},
	{"session uppercase", `{"session":"Chat-1","call":3,"tool":"t","arguments":"{}"}`, "invalid_value"},
	{"session empty", `{"session":"","call":3,"tool":"t","arguments":"{}"}`, "invalid_value"},
	{"session 65 characters", `{"session":"` + strings.Repeat("a", 65) + `","call":3,"tool":"t","arguments":"{}"}`, "invalid_value"},
	{"session escaped", `{"session":"chat\u002d1","call":3,"tool":"t","arguments":"{}"}`, "not_canonical"},
	{"session null", `{"session":null,"call":3,"tool":"t","arguments":"{}"}`, "invalid_value"},
	{"tool a number", `{"session":"chat-1","call":3,"tool":1,"arguments":"{}"}`, "wrong_type"},
	{"arguments an object", `{"session":"chat-1","call":3,"tool":"t","arguments":{}}`, "wrong_type"},
	{"arguments missing", `{"session":"chat-1","call":3,"tool":"t"}`, "not_canonical"},
	{"call missing", `{"session":"chat-1","tool":"t","arguments":"{}"}`, "not_canonical"},
	{"extra field", `{"session":"chat-1","call":3,"tool":"t","arguments":"{}","extra":1}`, "unknown_field"},
	{"case variant field", `{"session":"chat-1","call":3,"Tool":"t","arguments":"{}"}`, "unknown_field"},
	{"duplicate field", `{"session":"chat-1","call":3,"tool":"t","tool":"t","arguments":"{}"}`, "duplicate_key"},
	{"out of order", `{"session":"chat-1","call":3,"arguments":"{}","tool":"t"}`, "not_canonical"},
	{"space after colon", `{"session":"chat-1","call": 3,"tool":"t","arguments":"{}"}`, "not_canonical"},
	{"space before brace", `{"session":"chat-1","call":3,"tool":"t","arguments":"{}" }`, "not_canonical"},
	{"newline inside", "{\"session\":\"chat-1\",\n\"call\":3,\"tool\":\"t\",\"arguments\":\"{}\"}", "not_canonical"},
	{"brace too many", `{"session":"chat-1","call":3,"tool":"t","arguments":"{}"}}`, "trailing_data"},
	{"empty object", `{}`, "invalid_value"},
}

// checkToolDecode holds decodeToolRequest to the json path for body: it
// decodes exactly the bodies that as[ToolRequest] decodes and Marshal writes
// back unchanged, to the same value; and the envelope around body decodes
// as the slow path alone decodes it. It reports whether the direct decoder
// took body.
func checkToolDecode(t *testing.T, body []byte) bool {
	t.Helper()
	got, ok := decodeToolRequest(body)
	want, err := as[ToolRequest, Message](body)
	canonical := false
	if err == nil {
		out, mErr := marshalReflect(want)
		canonical = mErr == nil && bytes.Equal(out, body)
		// Whatever the json path decodes, the two encoders write alike.
		if fast, ok := appendToolRequest(nil, want.(ToolRequest)); ok && (mErr != nil || !bytes.Equal(fast, out)) {
			t.Fatalf("%q: appendToolRequest %s, json %s (%v)", body, fast, out, mErr)
		}
	}
	switch {
	case ok && !canonical:
		t.Fatalf("%q: decoded directly as %+v, but the json path gives %+v (%v), not canonical", body, got, want, err)
	case ok && !reflect.DeepEqual(Message(got), want):
		t.Fatalf("%q: decoded directly as %+v, the json path as %+v", body, got, want)
	case !ok && canonical:
		t.Fatalf("%q: declined a canonical body", body)
	}
	env := toolEnvelope(string(body))
	if err := sameAsSlow(env); err != nil {
		t.Fatalf("%q: %v", env, err)
	}
	if _, err := fastAgrees(env); err != nil {
		t.Fatalf("%q: %v", env, err)
	}
	return ok
}

// checkToolEncode holds appendToolRequest and Marshal to the json path.
func checkToolEncode(t *testing.T, v ToolRequest) {
	t.Helper()
	want, wantErr := marshalReflect(v)
	if got, ok := appendToolRequest(nil, v); ok && (wantErr != nil || !bytes.Equal(got, want)) {
		t.Fatalf("%+v:\nfast %s\njson %s (%v)", v, got, want, wantErr)
	}
	got, err := Marshal(v)
	if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%+v: Marshal %s (%v), json %s (%v)", v, got, err, want, wantErr)
	}
}

func TestToolRequestNearMisses(t *testing.T) {
	for _, c := range toolNearMisses {
		if _, ok := decodeToolRequest([]byte(c.body)); ok {
			t.Errorf("%s: decoded %q directly", c.name, c.body)
		}
		checkToolDecode(t, []byte(c.body))
		if got := rejectResult("env-", toolEnvelope(c.body)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// TestToolRequestDirectPath makes sure the direct decoder is the one taken,
// not one that always declines: for the fixture and for bodies with
// escapes, decodeToolRequest decodes them, and UnmarshalEnvelope allocates
// only what it does (the session, one string for tool and arguments, the
// Message), where the json path allocates more than twice as often.
func TestToolRequestDirectPath(t *testing.T) {
	body, fixture := fixtureToolBody(t)
	for _, b := range append([]string{string(body)}, toolAccepted...) {
		if !checkToolDecode(t, []byte(b)) {
			t.Errorf("the direct decoder declined %q", b)
		}
		if _, err := UnmarshalEnvelope(toolEnvelope(b)); err != nil {
			t.Errorf("%q: %v", b, err)
		}
	}
	for _, in := range [][]byte{fixture, toolEnvelope(toolAccepted[1])} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := UnmarshalEnvelope(in); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 3 {
			t.Errorf("UnmarshalEnvelope(%q) allocates %v times: not the direct path", in, allocs)
		}
	}
}

// TestToolRequestFastPath: random requests, valid and not, through both
// encoders; their encodings and single-byte edits of them through both
// decoders. Enough must be decoded directly to matter.
func TestToolRequestFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	strs := []string{"", "read_file", `{"path":"/a"}`, "\"quoted\"\\", "\x00\x1f\x7f", "\b\f\n\r\t", "<&>/", "\u2028\u2029",
		"é ☃ 🙂", "\xff", "\xed\xa0\x80", strings.Repeat(`{"k":"v"}`, 80)}
	sessions := []string{"chat-1", "", "Bad", "a-b-0", "a\"b", strings.Repeat("x", 64), strings.Repeat("x", 65)}
	edits := []byte(`"\ 0u9}{,:-aAeE/` + "\x00\xff\xc3\xa9")
	direct := 0
	for range 20000 {
		v := ToolRequest{SessionID{sessions[rng.IntN(len(sessions))]}, CallID(rng.Uint64() >> rng.IntN(65)),
			strs[rng.IntN(len(strs))], strs[rng.IntN(len(strs))]}
		checkToolEncode(t, v)
		body, err := marshalReflect(v)
		if err != nil {
			continue
		}
		if checkToolDecode(t, body) {
			direct++
		}
		i := rng.IntN(len(body))
		switch e := edits[rng.IntN(len(edits))]; rng.IntN(3) {
		case 0:
			body[i] = e
		case 1:
			body = append(body[:i:i], append([]byte{e}, body[i:]...)...)
		default:
			body = append(body[:i:i], body[i+1:]...)
		}
		checkToolDecode(t, body)
	}
	if direct < 5000 {
		t.Errorf("only %d of 20000 bodies decoded directly", direct)
	}
}

// FuzzToolRequestFastPath: for any body, the direct decoder declines or
// agrees with the json path, never declines a canonical body, and the
// envelope around it decodes as the slow path alone decodes it.
func FuzzToolRequestFastPath(f *testing.F) {
	body, _ := fixtureToolBody(f)
	f.Add(body)
	for _, b := range toolAccepted {
		f.Add([]byte(b))
	}
	for _, c := range toolNearMisses {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkToolDecode(t, body)
	})
}
