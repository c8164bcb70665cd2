package wire_test

import (
	"bytes"
	"strings"
	"testing"

	"boxmaker/wire"
)

// resultEnvelope builds a final result frame whose whole body is close to
// size bytes (the content is size minus the envelope's own bytes).
func resultEnvelope(b *testing.B, size int) wire.Envelope {
	e := wire.Reply(7, true, wire.ResultResponse{Class: wire.Private})
	overhead, err := wire.MarshalEnvelope(e)
	if err != nil {
		b.Fatal(err)
	}
	line := "The quick brown fox jumps over the lazy dog; notes for today. "
	content := strings.Repeat(line, size/len(line)+1)[:size-len(overhead)]
	e.Msg = wire.ResultResponse{Content: content, Class: wire.Private}
	return e
}

// BenchmarkFrame measures encoding and decoding a tool result frame of 1 KiB
// and of 1 MiB (MaxFrame, the largest result a frame carries). MB/s is frame
// bytes per second.
func BenchmarkFrame(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MiB", wire.MaxFrame}} {
		e := resultEnvelope(b, size.n)
		var frame bytes.Buffer
		if err := wire.WriteEnvelope(&frame, e); err != nil {
			b.Fatal(err)
		}
		b.Run("encode-"+size.name, func(b *testing.B) {
			b.SetBytes(int64(frame.Len()))
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if err := wire.WriteEnvelope(&out, e); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode-"+size.name, func(b *testing.B) {
			b.SetBytes(int64(frame.Len()))
			for b.Loop() {
				if _, err := wire.ReadEnvelope(bytes.NewReader(frame.Bytes())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSmallFrame measures what brokerd pays per request: a tool
// request decoded, a denial encoded.
func BenchmarkSmallFrame(b *testing.B) {
	sid, _ := wire.NewSessionID("chat-1758096300000")
	req := wire.Request(7, wire.ToolRequest{Session: sid, Call: 3, Tool: "read_file", Arguments: `{"path":"/home/kyle/notes/a.md"}`})
	body, err := wire.MarshalEnvelope(req)
	if err != nil {
		b.Fatal(err)
	}
	denied := wire.Reply(7, true, wire.DeniedResponse{Reason: wire.NoGrant})
	b.Run("decode-request", func(b *testing.B) {
		for b.Loop() {
			if _, err := wire.UnmarshalEnvelope(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-denied", func(b *testing.B) {
		for b.Loop() {
			if _, err := wire.MarshalEnvelope(denied); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecisionRecord measures what brokerd pays to encode the Decision
// event it writes for every request.
func BenchmarkDecisionRecord(b *testing.B) {
	sid, _ := wire.NewSessionID("chat-1758096300000")
	id, sha := "deny", wire.Sha256([]byte("grant"))
	ev := wire.DecisionEvent{Session: sid, Call: 3, Tool: "read_file", Arguments: `{"path":"/home/kyle/notes/a.md"}`,
		Outcome: wire.OutcomeDenied{Reason: wire.DeniedByGrant}, Grant: &id, GrantSha256: &sha, Taint: wire.Private}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.Marshal(ev); err != nil {
			b.Fatal(err)
		}
	}
}
