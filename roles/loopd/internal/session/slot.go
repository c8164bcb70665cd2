package session

import (
	"context"
	"fmt"

	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/roles/loopd/internal/slots"
)

// takeSlot holds a server slot for the session's next request and makes
// the request name it. The hint is the slot of the last answered request,
// the one whose tokens the session expects to find cached; without an
// expectation there is nothing to go back for. The caller releases the
// lease once the answer is in (or the request failed).
func (s *Session) takeSlot(ctx context.Context) (*slots.Lease, error) {
	hint := -1
	if s.last != nil {
		hint = s.last.Slot
	}
	lease, err := s.cfg.pool.Acquire(ctx, s.id.String(), hint)
	if err != nil {
		return nil, fmt.Errorf("the turn ended while it waited for a free model server slot (every slot was busy with another session): %w", err)
	}
	s.req.SetSlot(lease.Slot)
	s.slot = lease.Slot
	return lease, nil
}

// expects reports whether the request on lease should find the last
// answered request cached: that request went to this same slot, and the
// session has been the slot's most recent user since. A session moved to
// another slot, or back to one another session used in between, expects
// nothing: the server computes its history again there, which is the
// price of sharing slots, not a loss.
func (s *Session) expects(lease *slots.Lease) bool {
	return s.last != nil && lease.Kept && s.last.Slot == int(lease.Slot)
}

// sentSlot makes the rebuilt request name the slot the last request was
// sent to, so that it renders the bytes that were sent. An entry from
// before sessions shared the slots names none: that request went to the
// epoch's SessionStart slot, which the request already names.
func (s *Session) sentSlot(sent *sessionlog.Sent) {
	if sent.Slot < 0 {
		sent.Slot = int(s.slot)
		return
	}
	s.req.SetSlot(uint32(sent.Slot))
	s.slot = uint32(sent.Slot)
}
