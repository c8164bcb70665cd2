package wire

import (
	"bytes"
	"unicode/utf8"
)

// fastEnvelope decodes an envelope that is already canonical, matching its
// fixed members by bytes instead of tokenizing them: brokerd decodes one per
// request, and tokenizing was about 40% of the cost. It accepts exactly what
// slowEnvelope accepts when it succeeds, with the same result; on anything
// else it says no and the caller falls back to slowEnvelope, which explains
// the error, so it never produces an error of its own.
//
// The prefix it matches is MarshalEnvelope's for v 1, so only the body needs
// re-encoding to show that the whole input is canonical.
func fastEnvelope(data []byte) (Envelope, bool) {
	var e Envelope
	if !utf8.Valid(data) {
		return e, false
	}
	rest, ok := bytes.CutPrefix(data, []byte(`{"v":1,"id":`))
	if !ok {
		return e, false
	}
	id, rest, ok := cutCanonicalUint64(rest)
	if !ok {
		return e, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"final":`)); !ok {
		return e, false
	}
	var final bool
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		final, rest = true, rest[len("true"):]
	case bytes.HasPrefix(rest, []byte("false")):
		rest = rest[len("false"):]
	default:
		return e, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"msg":{"kind":"`)); !ok {
		return e, false
	}
	// An escaped or unknown kind is not a key of messages, so a kind is
	// taken up to the first quote and looked up as it stands.
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return e, false
	}
	kind := rest[:end]
	dec, ok := messages[string(kind)]
	if !ok {
		return e, false
	}
	if rest, ok = bytes.CutPrefix(rest[end:], []byte(`","body":`)); !ok {
		return e, false
	}
	body, ok := bytes.CutSuffix(rest, []byte("}}"))
	if !ok {
		return e, false
	}
	// brokerd decodes a tool_request per call: its body is read directly
	// (toolfast.go). One that decoder declines goes the generic way below.
	if string(kind) == KindToolRequest {
		if v, ok := decodeToolRequest(body); ok {
			return Envelope{V: Version, ID: id, Final: final, Msg: v}, true
		}
	}
	msg, err := dec(body)
	// MarshalEnvelope writes msg.Kind(), so the slow path refuses a message
	// whose kind is not the one it was decoded as; so does this.
	if err != nil || msg == nil || msg.Kind() != string(kind) {
		return e, false
	}
	out, err := Marshal(msg)
	if err != nil || !bytes.Equal(out, body) {
		return e, false
	}
	return Envelope{V: Version, ID: id, Final: final, Msg: msg}, true
}

// cutCanonicalUint64 reads the decimal digits at the start of b as
// parseCanonicalUint does: no leading zero, no overflow.
func cutCanonicalUint64(b []byte) (uint64, []byte, bool) {
	var n uint64
	i := 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, nil, false
		}
		n = n*10 + d
	}
	if i == 0 || (i > 1 && b[0] == '0') {
		return 0, nil, false
	}
	return n, b[i:], true
}
