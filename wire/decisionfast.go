package wire

import (
	"encoding/hex"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// brokerd encodes a Decision record for every tool call, before it answers,
// and through the json package's reflection that was a tenth of a denied
// call's time. appendDecision writes the same bytes directly, and
// appendDenied the denial it answers with. It handles
// only values it can write exactly; for anything else (an invalid enum, a
// zero id, invalid UTF-8, a nil outcome) it declines, and Marshal takes the
// json path, which writes or refuses as it always has. A differential test
// and a fuzz target hold the two paths to the same bytes.

// appendDecision appends v's encoding to dst, or reports false.
func appendDecision(dst []byte, v DecisionEvent) ([]byte, bool) {
	if !v.Taint.Valid() {
		return dst, false
	}
	dst, ok := appendRequestFields(append(dst, `{"type":"decision",`...),
		ToolRequest{Session: v.Session, Call: v.Call, Tool: v.Tool, Arguments: v.Arguments})
	if !ok {
		return dst, false
	}
	var err error
	switch o := v.Outcome.(type) {
	case OutcomeAllowed:
		dst = append(dst, `,"outcome":{"outcome":"allowed"}`...)
	case OutcomeAsk:
		dst = append(dst, `,"outcome":{"outcome":"ask"}`...)
	case OutcomeDenied:
		if o.Reason == 0 || int(o.Reason) >= len(denyReasonNames.names) {
			return dst, false
		}
		dst = append(dst, `,"outcome":{"outcome":"denied","reason":"`...)
		dst = append(dst, denyReasonNames.names[o.Reason]...)
		dst = append(dst, `"}`...)
	default: // nil, or a pointer to a variant
		return dst, false
	}
	dst = append(dst, `,"grant":`...)
	if v.Grant == nil {
		dst = append(dst, "null"...)
	} else if dst, err = jsontext.AppendQuote(dst, *v.Grant); err != nil {
		return dst, false
	}
	dst = append(dst, `,"grant_sha256":`...)
	if v.GrantSha256 == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		dst = hex.AppendEncode(dst, v.GrantSha256[:])
		dst = append(dst, '"')
	}
	dst = append(dst, `,"taint":"`...)
	dst = append(dst, dataClassNames.names[v.Taint]...)
	dst = append(dst, `","untrusted":`...)
	dst = strconv.AppendBool(dst, v.Untrusted)
	return append(dst, '}'), true
}

// appendDenied appends a denial's encoding to dst, or reports false.
func appendDenied(dst []byte, v DeniedResponse) ([]byte, bool) {
	if v.Reason == 0 || int(v.Reason) >= len(denyReasonNames.names) {
		return dst, false
	}
	dst = append(dst, `{"status":"denied","reason":"`...)
	dst = append(dst, denyReasonNames.names[v.Reason]...)
	return append(dst, `"}`...), true
}
