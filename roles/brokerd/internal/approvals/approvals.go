// Package approvals is the table of calls waiting for the owner (M3a §6):
// in memory only, so after a restart there are none. Each entry ends once,
// by whichever comes first: the owner's approve or refuse, its expiry, or
// the caller dropping it because loopd's connection closed.
package approvals

import (
	"errors"
	"slices"
	"sync"
	"time"

	"boxmaker/wire"
)

// ErrNoSuchApproval: the id is unknown, or its approval has already ended.
var ErrNoSuchApproval = errors.New("approvals: no such pending approval")

// Who is who answered an approval, as the Approval record keeps it (M3a §6,
// issue 14): By is "bxctl" for admin.sock, or the Mattermost user id of the
// owner who answered; Post is the approval post the answer came on (nil for
// bxctl).
type Who struct {
	By   string
	Post *string
}

// Bxctl is every answer that comes through admin.sock.
var Bxctl = Who{By: "bxctl"}

// Answer is how an approval ended, delivered to the waiting call. The call
// sends the outcome it recorded to Outcome (when not nil), so the owner's
// approve or refuse is answered only once the Approval record is written.
type Answer struct {
	Answer  wire.ApprovalAnswer
	Who     Who     // who approved or refused; zero when it expired
	Reason  *string // the owner's text, for a refusal
	Outcome chan<- wire.DecisionRecord
}

// Reply sends the recorded outcome to whoever answered; it never blocks.
func (a Answer) Reply(rec wire.DecisionRecord) {
	if a.Outcome != nil {
		a.Outcome <- rec
	}
}

type entry struct {
	info wire.PendingApproval
	ans  chan Answer // capacity 1: ending an entry never blocks
}

// Table holds the pending approvals. It is safe for concurrent use.
type Table struct {
	mu    sync.Mutex
	items map[uint64]*entry
}

// New returns an empty table.
func New() *Table { return &Table{items: map[uint64]*entry{}} }

// Add puts info in the table under info.Approval (the seq of the call's
// Decision record, unique in the log) and returns the channel its answer
// arrives on.
func (t *Table) Add(info wire.PendingApproval) <-chan Answer {
	e := &entry{info: info, ans: make(chan Answer, 1)}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.items[info.Approval] = e
	return e.ans
}

// Drop removes a pending entry without an answer: loopd's connection closed.
// It returns false if the entry had already ended, in which case its answer
// is already waiting on the channel Add returned.
func (t *Table) Drop(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.items[id]; !ok {
		return false
	}
	delete(t.items, id)
	return true
}

// List returns the pending approvals, oldest first.
func (t *Table) List() []wire.PendingApproval {
	t.mu.Lock()
	out := make([]wire.PendingApproval, 0, len(t.items))
	for _, e := range t.items {
		out = append(out, e.info)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b wire.PendingApproval) int {
		switch {
		case a.Approval < b.Approval:
			return -1
		case a.Approval > b.Approval:
			return 1
		}
		return 0
	})
	return out
}

// Len is the number of pending approvals.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.items)
}

// Approve ends the entry with approved, by who, and returns the channel the
// call's re-decision arrives on. An entry past its expiry is expired
// instead, and the owner gets ErrNoSuchApproval: the sweep is only once a
// second.
func (t *Table) Approve(id uint64, who Who, now time.Time) (<-chan wire.DecisionRecord, error) {
	return t.end(id, now, Answer{Answer: wire.Approved, Who: who})
}

// Refuse ends the entry with refused, by who, and the owner's reason.
func (t *Table) Refuse(id uint64, who Who, reason *string, now time.Time) (<-chan wire.DecisionRecord, error) {
	return t.end(id, now, Answer{Answer: wire.Refused, Who: who, Reason: reason})
}

func (t *Table) end(id uint64, now time.Time, a Answer) (<-chan wire.DecisionRecord, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.items[id]
	if !ok {
		return nil, ErrNoSuchApproval
	}
	delete(t.items, id)
	if expired(e, now) {
		e.ans <- Answer{Answer: wire.Expired}
		return nil, ErrNoSuchApproval
	}
	out := make(chan wire.DecisionRecord, 1)
	a.Outcome = out
	e.ans <- a
	return out, nil
}

// Expire ends every entry whose expiry has come, and says how many.
func (t *Table) Expire(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, e := range t.items {
		if expired(e, now) {
			delete(t.items, id)
			e.ans <- Answer{Answer: wire.Expired}
			n++
		}
	}
	return n
}

func expired(e *entry, now time.Time) bool { return wire.TimestampOf(now) >= e.info.Expires }
