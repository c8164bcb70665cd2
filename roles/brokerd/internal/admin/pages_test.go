package admin

import (
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

func item(t *testing.T, id uint64, argLen int) wire.PendingApproval {
	s, err := wire.NewSessionID("chat-1")
	if err != nil {
		t.Fatal(err)
	}
	at := wire.TimestampOf(time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC))
	return wire.PendingApproval{Approval: id, Session: s, Call: 1, Tool: "read_file",
		Arguments: `{"path":"/a"` + strings.Repeat(" ", max(argLen-13, 0)) + `}`, Grant: "a", Taint: wire.Private, Created: at, Expires: at}
}

// size is the encoded frame body of e.
func size(t *testing.T, e wire.Envelope) int {
	b, err := wire.MarshalEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestPagesFit: every frame fits, only the last is final, the items come in
// order and all of them, and a page is full: the next item would not fit.
func TestPagesFit(t *testing.T) {
	var items []wire.PendingApproval
	for i := range 9 {
		items = append(items, item(t, uint64(10+i), 300_000+i*1000))
	}
	pages := Pages(7, items)
	var got []uint64
	for i, p := range pages {
		list, ok := p.Msg.(wire.ApprovalList)
		if !ok || p.ID != 7 || p.Final != (i == len(pages)-1) || size(t, p) > wire.MaxFrame {
			t.Fatalf("frame %d: %T id %d final %v size %d", i, p.Msg, p.ID, p.Final, size(t, p))
		}
		for _, it := range list.Items {
			got = append(got, it.Approval)
		}
		if i < len(pages)-1 {
			next := pages[i+1].Msg.(wire.ApprovalList).Items[0]
			fuller := wire.Reply(7, false, wire.ApprovalList{Items: append(list.Items[:len(list.Items):len(list.Items)], next)})
			if size(t, fuller) <= wire.MaxFrame {
				t.Errorf("frame %d was not full: approval %d would have fitted", i, next.Approval)
			}
		}
	}
	if len(pages) != 3 || len(got) != 9 || got[0] != 10 || got[8] != 18 {
		t.Fatalf("%d frames, approvals %v", len(pages), got)
	}
}

// TestPagesOneFrame: a list that fits is the spec's one final frame, the
// empty list included.
func TestPagesOneFrame(t *testing.T) {
	for _, items := range [][]wire.PendingApproval{nil, {item(t, 1, 20), item(t, 2, 20)}} {
		pages := Pages(3, items)
		if len(pages) != 1 || !pages[0].Final {
			t.Fatalf("%d frames", len(pages))
		}
		b, _ := wire.MarshalEnvelope(pages[0])
		if items == nil && string(b) != `{"v":1,"id":3,"final":true,"msg":{"kind":"approval_list","body":{"items":[]}}}` {
			t.Fatalf("empty list: %s", b)
		}
	}
}

// TestPagesItemTooLarge: an approval larger than a frame on its own is left
// out, the others are listed, and the answer ends in an error frame that
// names it.
func TestPagesItemTooLarge(t *testing.T) {
	items := []wire.PendingApproval{item(t, 1, 100), item(t, 2, wire.MaxFrame-100), item(t, 3, 100)}
	pages := Pages(7, items)
	if len(pages) != 2 || pages[0].Final || !pages[1].Final {
		t.Fatalf("frames %+v", len(pages))
	}
	if l := pages[0].Msg.(wire.ApprovalList).Items; len(l) != 2 || l[0].Approval != 1 || l[1].Approval != 3 {
		t.Fatalf("listed %+v", l)
	}
	e, ok := pages[1].Msg.(wire.WireError)
	if !ok || e.Code != wire.Internal || !strings.Contains(e.Detail, "left out of the list: 2;") {
		t.Fatalf("last frame %+v", pages[1].Msg)
	}
	// Only too-large ones: an error, no empty list that would look whole.
	pages = Pages(7, items[1:2])
	if len(pages) != 1 || !pages[0].Final {
		t.Fatalf("frames %+v", pages)
	}
	if _, ok := pages[0].Msg.(wire.WireError); !ok {
		t.Fatalf("got %T", pages[0].Msg)
	}
}
