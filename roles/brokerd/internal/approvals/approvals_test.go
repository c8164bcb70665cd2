package approvals

import (
	"errors"
	"testing"
	"time"

	"boxmaker/wire"
)

var t0 = time.Date(2026, 9, 18, 8, 0, 0, 0, time.UTC)

// owner is an answer on Mattermost: the owner's user id and the post.
var owner = Who{By: "8xk3q9wzb7f1jdm4ytr6hcn2pa", Post: &ownerPost}

var ownerPost = "q7m2c8tx4jfu3ne9kdwbr5hy1o"

func add(tb *Table, id uint64, ttl time.Duration) <-chan Answer {
	return tb.Add(wire.PendingApproval{Approval: id, Tool: "shell", Grant: "g", Taint: wire.Private,
		Created: wire.TimestampOf(t0), Expires: wire.TimestampOf(t0.Add(ttl))})
}

func TestApproveDeliversOnceAndCarriesTheOutcomeBack(t *testing.T) {
	tb := New()
	ans := add(tb, 7, time.Minute)
	out, err := tb.Approve(7, Bxctl, t0)
	if err != nil {
		t.Fatal(err)
	}
	a := <-ans
	if a.Answer != wire.Approved || a.Who != Bxctl || a.Who.Post != nil {
		t.Fatalf("answer %+v", a)
	}
	a.Reply(wire.OutcomeAsk{})
	if rec := <-out; rec != (wire.OutcomeAsk{}) {
		t.Fatalf("outcome %v", rec)
	}
	if _, err := tb.Approve(7, Bxctl, t0); !errors.Is(err, ErrNoSuchApproval) {
		t.Fatalf("second approve: %v", err)
	}
	if _, err := tb.Refuse(7, Bxctl, nil, t0); !errors.Is(err, ErrNoSuchApproval) {
		t.Fatalf("refuse after approve: %v", err)
	}
	if tb.Drop(7) {
		t.Fatal("dropped an answered approval")
	}
}

func TestRefuseCarriesTheReason(t *testing.T) {
	tb := New()
	ans := add(tb, 3, time.Minute)
	why := "not now"
	if _, err := tb.Refuse(3, owner, &why, t0); err != nil {
		t.Fatal(err)
	}
	if a := <-ans; a.Answer != wire.Refused || a.Reason == nil || *a.Reason != why || a.Who != owner {
		t.Fatalf("got %+v", a)
	}
}

func TestExpiry(t *testing.T) {
	tb := New()
	early, late := add(tb, 1, time.Second), add(tb, 2, time.Minute)
	if n := tb.Expire(t0.Add(999 * time.Millisecond)); n != 0 {
		t.Fatalf("expired %d early", n)
	}
	if n := tb.Expire(t0.Add(time.Second)); n != 1 { // at expires exactly
		t.Fatalf("expired %d", n)
	}
	if a := <-early; a.Answer != wire.Expired || a.Who != (Who{}) {
		t.Fatalf("got %v", a.Answer)
	}
	// Approving after the expiry time but before the sweep expires it.
	if _, err := tb.Approve(2, Bxctl, t0.Add(time.Minute)); !errors.Is(err, ErrNoSuchApproval) {
		t.Fatalf("approve of an expired entry: %v", err)
	}
	if a := <-late; a.Answer != wire.Expired {
		t.Fatalf("got %v", a.Answer)
	}
	if tb.Len() != 0 {
		t.Fatalf("%d left", tb.Len())
	}
}

func TestDropAndList(t *testing.T) {
	tb := New()
	for _, id := range []uint64{9, 2, 5} {
		add(tb, id, time.Minute)
	}
	if !tb.Drop(5) || tb.Drop(5) {
		t.Fatal("drop")
	}
	l := tb.List()
	if len(l) != 2 || l[0].Approval != 2 || l[1].Approval != 9 {
		t.Fatalf("list %+v", l)
	}
	if _, err := tb.Approve(5, Bxctl, t0); !errors.Is(err, ErrNoSuchApproval) {
		t.Fatalf("approve of a dropped entry: %v", err)
	}
}
