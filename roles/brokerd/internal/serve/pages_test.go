package serve

import (
	"fmt"
	"strings"
	"testing"

	"boxmaker/wire"
)

// bigReq is a read_file request under the ask grant whose arguments are n
// bytes, padded with whitespace the JSON allows.
func bigReq(t *testing.T, call uint64, n int) wire.ToolRequest {
	args := `{"path":"/data/ask/notes.md"` + strings.Repeat(" ", n-29) + `}`
	return wire.ToolRequest{Session: sid(t, "chat-1"), Call: wire.CallID(call), Tool: "read_file", Arguments: args}
}

// frames sends approvals on admin.sock and reads every frame up to the
// final one.
func (h *harness) frames() []wire.Envelope {
	h.t.Helper()
	c := h.send(h.cfg.Sockets.Admin, wire.Approvals{})
	var out []wire.Envelope
	for {
		env := c.next(h.t)
		if env.ID != 7 {
			h.t.Fatalf("frame for %d", env.ID)
		}
		out = append(out, env)
		if env.Final {
			return out
		}
	}
}

// TestApprovalsLargerThanAFrame (issue 12): pending approvals that together
// are larger than a frame are listed in several frames instead of closing
// admin.sock without an answer; one larger than a frame on its own is named
// in a final error frame.
func TestApprovalsLargerThanAFrame(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	var want []uint64
	for call := range uint64(3) {
		_, p := h.pending(bigReq(t, call+1, 450_000))
		want = append(want, p.Approval)
	}
	frames := h.frames()
	var got []uint64
	for i, f := range frames {
		list, ok := f.Msg.(wire.ApprovalList)
		if !ok || f.Final != (i == len(frames)-1) {
			t.Fatalf("frame %d: %T final %v", i, f.Msg, f.Final)
		}
		for _, it := range list.Items {
			if len(it.Arguments) != 450_000 {
				t.Fatalf("approval %d: %d bytes of arguments", it.Approval, len(it.Arguments))
			}
			got = append(got, it.Approval)
		}
	}
	if len(frames) != 2 || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("%d frames listing %v, want %v", len(frames), got, want)
	}

	// Its arguments fill a request frame; with the list's other fields it
	// does not fit in an answer frame.
	_, p := h.pending(bigReq(t, 9, wire.MaxFrame-150))
	frames = h.frames()
	last := frames[len(frames)-1]
	e, ok := last.Msg.(wire.WireError)
	if !ok || e.Code != wire.Internal || !strings.Contains(e.Detail, fmt.Sprintf("left out of the list: %d;", p.Approval)) {
		t.Fatalf("last frame %+v", last.Msg)
	}
	if n := len(frames); n != 3 {
		t.Fatalf("%d frames", n)
	}
}
