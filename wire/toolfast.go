package wire

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// brokerd decodes a tool_request body for every call, and through the json
// package that was about 4 µs of it: json.Unmarshal, then Marshal again to
// show the body canonical. decodeToolRequest reads a canonical body directly
// instead, and appendToolRequest writes one (loopd encodes one per call,
// and the slow path re-encodes with it).
//
// A canonical body is exactly what appendToolRequest writes, so the decoder
// takes each part in that order and accepts a part only as that encoder
// would write it: the literal member names, the session id's characters as
// they stand, the call's canonical digits, and each string only if quoting
// what it unquotes to gives back its bytes. It therefore needs no re-encoding
// of its own. Anything else (an escape the encoder would not write, a
// space, another order, a member too many or too few) it declines, and
// fastEnvelope takes the generic way, which accepts or refuses as before. A
// differential test and a fuzz target hold both functions to the json path.

// appendToolRequest appends v's encoding to dst, or reports false.
func appendToolRequest(dst []byte, v ToolRequest) ([]byte, bool) {
	dst, ok := appendRequestFields(append(dst, '{'), v)
	return append(dst, '}'), ok
}

// appendRequestFields appends a request's four members, in order and
// without braces: a ToolRequest's whole body, and the start of the Decision
// record that records it. It reports false for what it cannot write.
func appendRequestFields(dst []byte, v ToolRequest) ([]byte, bool) {
	if !ValidID(v.Session.s) {
		return dst, false
	}
	var err error
	dst = append(dst, `"session":"`...)
	dst = append(dst, v.Session.s...) // [a-z0-9-]: nothing to escape
	dst = append(dst, `","call":`...)
	dst = strconv.AppendUint(dst, uint64(v.Call), 10)
	dst = append(dst, `,"tool":`...)
	if dst, err = jsontext.AppendQuote(dst, v.Tool); err != nil {
		return dst, false
	}
	dst = append(dst, `,"arguments":`...)
	if dst, err = jsontext.AppendQuote(dst, v.Arguments); err != nil {
		return dst, false
	}
	return dst, true
}

// decodeToolRequest decodes body if it is exactly appendToolRequest's
// encoding of a ToolRequest, or reports false.
func decodeToolRequest(body []byte) (ToolRequest, bool) {
	var v ToolRequest
	rest, ok := bytes.CutPrefix(body, []byte(`{"session":"`))
	if !ok {
		return v, false
	}
	// A session id has no quote and nothing escaped, so it ends at the
	// first quote; a backslash there fails ValidID.
	end := bytes.IndexByte(rest, '"')
	if end < 0 || !validIDBytes(rest[:end]) {
		return v, false
	}
	session := rest[:end]
	if rest, ok = bytes.CutPrefix(rest[end:], []byte(`","call":`)); !ok {
		return v, false
	}
	call, rest, ok := cutCanonicalUint64(rest)
	if !ok {
		return v, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"tool":`)); !ok {
		return v, false
	}
	// One buffer holds both strings' unquoted bytes, then one string
	// holds both: fewer allocations on every call.
	var stack [512]byte
	buf := stack[:0]
	if buf, rest, ok = cutCanonicalString(buf, rest); !ok {
		return v, false
	}
	toolLen := len(buf)
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"arguments":`)); !ok {
		return v, false
	}
	if buf, rest, ok = cutCanonicalString(buf, rest); !ok {
		return v, false
	}
	if len(rest) != 1 || rest[0] != '}' {
		return v, false
	}
	strs := string(buf)
	v.Session = SessionID{string(session)}
	v.Call = CallID(call)
	v.Tool, v.Arguments = strs[:toolLen], strs[toolLen:]
	return v, true
}

// validIDBytes is ValidID for bytes, without converting them to a string.
func validIDBytes(b []byte) bool {
	if len(b) == 0 || len(b) > 64 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// cutCanonicalString reads the JSON string at the start of b and appends
// its value to dst, if the string is exactly what jsontext.AppendQuote (the
// json encoder's quoting, with this package's options) writes for that
// value; otherwise it reports false.
func cutCanonicalString(dst, b []byte) ([]byte, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return dst, nil, false
	}
	// The closing quote is the first one not escaped by a backslash;
	// AppendUnquote below checks everything else about the string.
	end := -1
	for i := 1; i < len(b); i++ {
		if b[i] == '\\' {
			i++
		} else if b[i] == '"' {
			end = i
			break
		}
	}
	if end < 0 {
		return dst, nil, false
	}
	quoted := b[:end+1]
	start := len(dst)
	dst, err := jsontext.AppendUnquote(dst, quoted)
	if err != nil {
		return dst, nil, false
	}
	// The quoting goes after the value in the same buffer and is cut off
	// again: only the comparison needs it.
	n := len(dst)
	requoted, err := jsontext.AppendQuote(dst, dst[start:n])
	if err != nil || !bytes.Equal(requoted[n:], quoted) {
		return dst, nil, false
	}
	return requoted[:n], b[end+1:], true
}
