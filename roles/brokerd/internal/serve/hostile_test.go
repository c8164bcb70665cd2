package serve

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

func frame(body string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func envelope(v, final, kind, body string) string {
	return `{"v":` + v + `,"id":3,"final":` + final + `,"msg":{"kind":"` + kind + `","body":` + body + `}}`
}

const toolBody = `{"session":"s-1","call":1,"tool":"read_file","arguments":"{}"}`

// hostile is one misbehaving client: the bytes it sends, whether it then
// half-closes (so it can still read an answer), closes outright, or stays
// silent, and the error code it must get (0: the connection is closed
// without an answer).
type hostile struct {
	name      string
	send      []byte
	halfClose bool
	want      wire.ErrorCode
	gone      bool
}

// hostiles are the misbehaving clients of a socket whose good request is
// kind with body; bodyKind and bodies are a kind with an integer field
// (call, approval) and its body with that field a float, a case variant and
// a duplicate.
func hostiles(kind, body, bodyKind string, bodies [3]string) []hostile {
	good := envelope("1", "true", kind, body)
	return []hostile{
		{"float in body", frame(envelope("1", "true", bodyKind, bodies[0])), false, wire.BadMessage, false},
		{"case variant body key", frame(envelope("1", "true", bodyKind, bodies[1])), false, wire.BadMessage, false},
		{"duplicate body key", frame(envelope("1", "true", bodyKind, bodies[2])), false, wire.BadMessage, false},
		{"zero length", []byte{0, 0, 0, 0}, false, wire.BadFrame, false},
		{"oversized length", []byte{0x00, 0x10, 0x00, 0x01}, false, wire.BadFrame, false},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}, false, wire.BadFrame, false},
		{"truncated frame", frame(good)[:20], true, wire.BadFrame, false},
		{"truncated prefix", []byte{0, 0}, true, wire.BadFrame, false},
		{"wrong version", frame(envelope("2", "true", kind, body)), false, wire.BadVersion, false},
		{"version zero", frame(envelope("0", "true", kind, body)), false, wire.BadVersion, false},
		{"not final", frame(envelope("1", "false", kind, body)), false, wire.BadMessage, false},
		{"unknown envelope field", frame(strings.TrimSuffix(good, "}") + `,"x":1}`), false, wire.BadMessage, false},
		{"unknown body field", frame(envelope("1", "true", kind, strings.TrimSuffix(body, "}")+sep(body)+`"x":1}`)), false, wire.BadMessage, false},
		{"case variant envelope key", frame(strings.Replace(good, `"final"`, `"Final"`, 1)), false, wire.BadMessage, false},
		{"case variant kind key", frame(strings.Replace(good, `"kind"`, `"Kind"`, 1)), false, wire.BadMessage, false},
		{"duplicate envelope key", frame(strings.Replace(good, `"id":3`, `"id":3,"id":4`, 1)), false, wire.BadMessage, false},
		{"float id", frame(strings.Replace(good, `"id":3`, `"id":3.0`, 1)), false, wire.BadMessage, false},
		{"exponent version", frame(strings.Replace(good, `"v":1`, `"v":1e0`, 1)), false, wire.BadMessage, false},
		{"unknown kind", frame(envelope("1", "true", "frobnicate", "{}")), false, wire.BadMessage, false},
		{"wrong kind", frame(envelope("1", "true", "say", `{"session":null,"text":"hi"}`)), false, wire.Forbidden, false},
		{"response kind", frame(envelope("1", "true", "tool_response", `{"status":"denied","reason":"no_grant"}`)), false, wire.Forbidden, false},
		{"not json", frame("hello"), false, wire.BadMessage, false},
		{"invalid utf-8", frame(strings.Replace(good, `"kind"`, "\"k\xffind\"", 1)), false, wire.BadMessage, false},
		{"trailing data", frame(good + " "), false, wire.BadMessage, false},
		{"two requests", append(frame(good), frame(good)...), false, 0, false}, // the first is answered; see below
		{"silent", nil, false, 0, false},
		{"half a frame, then silence", frame(good)[:9], false, 0, false},
		{"gone mid-frame", frame(good)[:9], false, 0, true},
	}
}

// sep is "," unless the JSON object body is empty.
func sep(body string) string {
	if body == "{}" {
		return ""
	}
	return ","
}

// TestHostileClients: each misbehaving client gets its error or a closed
// connection, nothing is written to the audit log for it, and the next
// good request on the same socket is served.
func TestHostileClients(t *testing.T) {
	// Silent clients are cut off after the request timeout; short here.
	h := start(t, nil, func(o *Options) { o.RequestTimeout = 300 * time.Millisecond })
	for _, sock := range []struct {
		name, path, kind, body string
		records                int // what one good request writes
		bodyKind               string
		bodies                 [3]string
	}{
		{"broker.sock", h.cfg.Sockets.Broker, "tool_request", toolBody, 1, "tool_request", [3]string{
			strings.Replace(toolBody, `"call":1`, `"call":1.0`, 1),
			strings.Replace(toolBody, `"session"`, `"Session"`, 1),
			strings.Replace(toolBody, `"session":"s-1"`, `"session":"s-1","session":"s-2"`, 1)}},
		{"admin.sock", h.cfg.Sockets.Admin, "check_grants", "{}", 0, "approve", [3]string{
			`{"approval":1.5}`, `{"Approval":1}`, `{"approval":1,"approval":2}`}},
	} {
		for _, tc := range hostiles(sock.kind, sock.body, sock.bodyKind, sock.bodies) {
			t.Run(sock.name+"/"+tc.name, func(t *testing.T) {
				before := len(h.records())
				got, answered := h.rawExchange(t, sock.path, tc)
				if tc.name == "two requests" {
					// One request per connection: the first is answered
					// like any good one, the second ignored.
					if !answered || got.Kind() == wire.KindError {
						t.Fatalf("got %+v", got)
					}
					before += sock.records
				} else if tc.want == 0 && answered {
					t.Fatalf("answered %+v, want the connection closed", got)
				} else if e, ok := got.(wire.WireError); tc.want != 0 && (!ok || e.Code != tc.want) {
					t.Fatalf("got %+v, want error %v", got, tc.want)
				}
				if n := len(h.records()); n != before {
					t.Fatalf("%d audit records written for it", n-before)
				}
				// The daemon still serves.
				c := dial(t, sock.path)
				if _, err := c.Write(frame(envelope("1", "true", sock.kind, sock.body))); err != nil {
					t.Fatal(err)
				}
				if env := c.next(t); env.Msg.Kind() == wire.KindError {
					t.Fatalf("the next good request got %+v", env.Msg)
				}
				if n := len(h.records()); n != before+sock.records {
					t.Fatalf("%d records after a good request, want %d", n, before+sock.records)
				}
			})
		}
	}
	if h.rt.Count() != 0 {
		t.Fatal("something ran")
	}
}

// rawExchange sends tc's bytes and reads until the server closes the
// connection: the answer, if there was one. It fails if the connection is
// not closed within 5 s (the request timeout in these tests is 300 ms).
func (h *harness) rawExchange(t *testing.T, path string, tc hostile) (wire.Message, bool) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(tc.send) > 0 {
		if _, err := c.Write(tc.send); err != nil {
			t.Fatal(err)
		}
	}
	if tc.gone {
		return nil, false
	}
	if tc.halfClose {
		if err := c.(*net.UnixConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	data, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection was not closed")
	}
	if len(data) == 0 {
		return nil, false
	}
	env, err := wire.ReadEnvelope(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("the answer does not decode: %v (%q)", err, data)
	}
	if !env.Final {
		t.Fatalf("answer not final: %+v", env)
	}
	return env.Msg, true
}
