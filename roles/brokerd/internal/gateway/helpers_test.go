package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

const (
	ownerID = "8xk3q9wzb7f1jdm4ytr6hcn2pa"
	postID  = "q7m2c8tx4jfu3ne9kdwbr5hy1o"
)

var t0 = time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC)

// rig is a Client on a socket in a fresh directory, with a real approvals
// table, a head the test sets, and its log captured line by line.
type rig struct {
	t     *testing.T
	sock  string
	table *approvals.Table
	c     *Client

	mu    sync.Mutex
	head  *wire.AuditHead
	lines []string
}

// newRig starts a client; with up, a stand-in gatewayd listens first.
func newRig(t *testing.T, up bool, tune ...func(*Options)) (*rig, *gatewaytest.Gatewayd) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &rig{t: t, sock: filepath.Join(dir, "gateway.sock"), table: approvals.New()}
	var g *gatewaytest.Gatewayd
	if up {
		g = gatewaytest.Listen(t, r.sock)
	}
	o := Options{Socket: r.sock, Approvals: r.table, Head: r.getHead, Log: r.log, Now: func() time.Time { return t0 },
		RetryMin: 10 * time.Millisecond, RetryMax: 40 * time.Millisecond, EndGrace: 500 * time.Millisecond}
	for _, f := range tune {
		f(&o)
	}
	r.c = Start(o)
	t.Cleanup(r.c.Close)
	return r, g
}

func (r *rig) getHead() (wire.AuditHead, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.head == nil {
		return wire.AuditHead{}, false
	}
	return *r.head, true
}

func (r *rig) setHead(seq uint64) wire.AuditHead {
	h := wire.AuditHead{Seq: seq, Hash: wire.Sha256([]byte{byte(seq)})}
	r.mu.Lock()
	r.head = &h
	r.mu.Unlock()
	return h
}

func (r *rig) log(lines ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, strings.Join(lines, "\n"))
}

// logged is every log call so far, each one's lines joined.
func (r *rig) logged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// count is how many log calls contain s.
func (r *rig) count(s string) int {
	n := 0
	for _, l := range r.logged() {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// waitLog waits up to 10 s for n log calls containing s.
func (r *rig) waitLog(s string, n int) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if r.count(s) >= n {
			return
		}
	}
	r.t.Fatalf("timed out waiting for %d log lines with %q; log: %q", n, s, r.logged())
}

// pending adds approval id to the table and tells the client, as the
// broker does; it returns the answer channel and the end function.
func (r *rig) pending(id uint64) (wire.PendingApproval, <-chan approvals.Answer, func(wire.ApprovalEnded)) {
	r.t.Helper()
	sess, err := wire.NewSessionID("chat-1758096300")
	if err != nil {
		r.t.Fatal(err)
	}
	p := wire.PendingApproval{Approval: id, Session: sess, Call: 3, Tool: "shell",
		Arguments: `{"command":"rm -rf /home/kyle/scratch/build","cwd":"/home/kyle/scratch"}`, Grant: "shell-scratch",
		Taint: wire.Private, Created: wire.TimestampOf(t0), Expires: wire.TimestampOf(t0.Add(15 * time.Minute))}
	ans := r.table.Add(p)
	return p, ans, r.c.Pending(p)
}

// noAnswer fails the test if the approval has been answered.
func noAnswer(t *testing.T, ans <-chan approvals.Answer) {
	t.Helper()
	select {
	case a := <-ans:
		t.Fatalf("the approval was ended: %+v", a)
	default:
	}
}

func answer(t *testing.T, ans <-chan approvals.Answer) approvals.Answer {
	t.Helper()
	select {
	case a := <-ans:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no answer reached the table")
		return approvals.Answer{}
	}
}

func ptr[T any](v T) *T { return &v }

func approved() wire.OwnerAnswer {
	return wire.OwnerAnswer{Answer: wire.Approved, By: ownerID, Post: postID}
}
