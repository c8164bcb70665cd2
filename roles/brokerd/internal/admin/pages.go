package admin

import (
	"fmt"
	"strings"

	"boxmaker/wire"
)

// Pages is the answer to approvals {} (issue 12): the pending approvals,
// oldest first, in approval_list frames that each fit wire.MaxFrame, every
// frame but the last one not final. A list that fits in one frame is one
// final frame, exactly as M3a §6 has it. A pending approval too large for a
// frame on its own (its arguments can be nearly a frame already, and their
// encoding can grow) is left out, and the answer ends with a final error
// frame that names it: the owner is told what cannot be shown rather than
// given a list that looks whole. Never an answer that does not fit, so never
// a connection closed without one.
func Pages(id uint64, items []wire.PendingApproval) []wire.Envelope {
	empty, err := wire.MarshalEnvelope(wire.Reply(id, false, wire.ApprovalList{Items: []wire.PendingApproval{}}))
	if err != nil {
		return []wire.Envelope{wire.Reply(id, true, wire.WireError{Code: wire.Internal, Detail: err.Error()})}
	}
	room := wire.MaxFrame - len(empty) // "false" is longer than "true": the final frame fits too
	var (
		pages    [][]wire.PendingApproval
		page     = []wire.PendingApproval{}
		used     int
		tooLarge []uint64
	)
	for _, it := range items {
		b, err := wire.Marshal(&it)
		if err != nil || len(b) > room {
			tooLarge = append(tooLarge, it.Approval)
			continue
		}
		n := len(b)
		if len(page) > 0 {
			n++ // the comma
		}
		if used+n > room {
			pages, page, used, n = append(pages, page), []wire.PendingApproval{}, 0, len(b)
		}
		page, used = append(page, it), used+n
	}
	if len(page) > 0 || len(pages) == 0 && len(tooLarge) == 0 {
		pages = append(pages, page)
	}
	out := make([]wire.Envelope, 0, len(pages)+1)
	for i, p := range pages {
		out = append(out, wire.Reply(id, i == len(pages)-1 && len(tooLarge) == 0, wire.ApprovalList{Items: p}))
	}
	if len(tooLarge) > 0 {
		out = append(out, wire.Reply(id, true, wire.WireError{Code: wire.Internal, Detail: tooLargeDetail(tooLarge)}))
	}
	return out
}

// maxNamed is the most approval numbers an error names; the rest are counted.
const maxNamed = 64

func tooLargeDetail(ids []uint64) string {
	var b strings.Builder
	for i, id := range ids[:min(len(ids), maxNamed)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", id)
	}
	if len(ids) > maxNamed {
		fmt.Fprintf(&b, " and %d more", len(ids)-maxNamed)
	}
	return fmt.Sprintf("pending approvals too large to show in one frame (1 MiB), left out of the list: %s; refuse them (bxctl refuse ID) or let them expire", b.String())
}
