package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

// brokerd with [sockets] gateway, against a stand-in gatewayd (issue 14).

const (
	ownerID = "8xk3q9wzb7f1jdm4ytr6hcn2pa"
	postID  = "q7m2c8tx4jfu3ne9kdwbr5hy1o"
)

// gatewayTiming makes the retries quick.
var gatewayTiming = GatewayTiming{RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, EndGrace: 2 * time.Second}

// withGatewayd sets [sockets] gateway to <home>/run/broker-gateway/
// gateway.sock; with up, a stand-in listens there before brokerd starts,
// in *g.
func withGatewayd(t *testing.T, up bool, g **gatewaytest.Gatewayd) option {
	return func(o *Options) {
		path := filepath.Join(o.Config.Paths.Home, "run", "broker-gateway", "gateway.sock")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		o.Config.Sockets.Gateway = path
		o.Gateway = gatewayTiming
		if up {
			*g = gatewaytest.Listen(t, path)
		}
	}
}

// lastRecord is the log's last record as gatewayd is sent it: its seq and
// the SHA-256 of its line.
func (h *harness) lastRecord() wire.AuditHead {
	h.t.Helper()
	names, _ := filepath.Glob(filepath.Join(h.cfg.Paths.Home, "audit", "*.jsonl"))
	if len(names) == 0 {
		h.t.Fatal("no log file")
	}
	data, err := os.ReadFile(names[len(names)-1])
	if err != nil {
		h.t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	last := lines[len(lines)-1]
	var rec wire.AuditRecord
	if err := wire.Unmarshal([]byte(last), &rec); err != nil {
		h.t.Fatal(err)
	}
	return wire.AuditHead{Seq: rec.Seq, Hash: wire.Sha256([]byte(last))}
}

// lastLine is the log's last line.
func (h *harness) lastLine() string {
	names, _ := filepath.Glob(filepath.Join(h.cfg.Paths.Home, "audit", "*.jsonl"))
	data, _ := os.ReadFile(names[len(names)-1])
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	return lines[len(lines)-1]
}

func isStart(m wire.Message) bool { _, ok := m.(wire.BrokerStart); return ok }

// TestGatewayApproveOnMattermost: broker_start with this run's instance
// and a null head (the log is empty); the approval request with every
// field, the call's digest and the log's last record; the owner's answer
// runs the call, and the Approval record names the owner and the post;
// approval_ended says so.
func TestGatewayApproveOnMattermost(t *testing.T) {
	var g *gatewaytest.Gatewayd
	h := start(t, map[string]string{"a.toml": grantAsk}, withGatewayd(t, true, &g))
	m, _ := g.Wait(t, 0, "broker_start", isStart)
	if s := m.(wire.BrokerStart); s.Broker != h.srv.gateway.Broker() || s.Head != nil {
		t.Fatalf("broker_start %+v", s)
	}
	c, p := h.pending(askReq(t))
	req := g.Request(t)
	it := h.admin(wire.Approvals{}).(wire.ApprovalList).Items[0]
	want := wire.ApprovalRequest{Broker: h.srv.gateway.Broker(), Approval: p.Approval, Session: it.Session, Call: it.Call,
		Tool: it.Tool, Arguments: it.Arguments, Grant: it.Grant, Taint: it.Taint, Created: it.Created, Expires: p.Expires,
		Digest: wire.CallDigest("read_file", `{"path":"/data/ask/notes.md"}`, "a", wire.Private), Head: h.lastRecord()}
	if !reflect.DeepEqual(req.Msg, want) || want.Head.Seq != p.Approval {
		t.Fatalf("request %+v\nwant    %+v", req.Msg, want)
	}
	req.Send(t, false, wire.ApprovalPosted{Post: postID})
	req.Send(t, true, wire.OwnerAnswer{Answer: wire.Approved, By: ownerID, Post: postID})
	final := c.next(t)
	if r, ok := final.Msg.(wire.ResultResponse); !ok || !final.Final || r.Content != "file content" {
		t.Fatalf("loopd got %+v", final)
	}
	evs := h.events()
	wantEv := wire.ApprovalEvent{Session: sid(t, "chat-1"), Call: 1, Decision: p.Approval, Answer: wire.Approved,
		By: ptr(ownerID), Post: ptr(postID), Outcome: wire.OutcomeAsk{}}
	if len(evs) != 3 || !reflect.DeepEqual(evs[1], wantEv) || h.rt.Count() != 1 {
		t.Fatalf("events %+v, runs %d", evs, h.rt.Count())
	}
	if got := g.Ended(t, p.Approval); !reflect.DeepEqual(got, wire.ApprovalEnded{Approval: p.Approval, End: wire.EndApproved,
		By: ptr(ownerID), Post: ptr(postID)}) {
		t.Fatalf("approval_ended %+v", got)
	}
	if out := h.stderr.String(); !strings.Contains(out, fmt.Sprintf("approval %d is posted on Mattermost as post %s", p.Approval, postID)) ||
		!strings.Contains(out, fmt.Sprintf("approval %d approved on Mattermost by %s", p.Approval, ownerID)) {
		t.Fatalf("stderr %q", out)
	}
}

// TestGatewayRefuseOnMattermost: a refusal with a reason is recorded with
// the owner, the post and the reason, and the call is denied.
func TestGatewayRefuseOnMattermost(t *testing.T) {
	var g *gatewaytest.Gatewayd
	h := start(t, map[string]string{"a.toml": grantAsk}, withGatewayd(t, true, &g))
	c, p := h.pending(askReq(t))
	req := g.Request(t)
	req.Send(t, false, wire.ApprovalPosted{Post: postID})
	req.Send(t, true, wire.OwnerAnswer{Answer: wire.Refused, By: ownerID, Post: postID, Reason: ptr("not on a Sunday")})
	if got := c.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.ApprovalRefused}) {
		t.Fatalf("loopd got %+v", got)
	}
	want := wire.ApprovalEvent{Session: sid(t, "chat-1"), Call: 1, Decision: p.Approval, Answer: wire.Refused, By: ptr(ownerID),
		Post: ptr(postID), Reason: ptr("not on a Sunday"), Outcome: wire.OutcomeDenied{Reason: wire.ApprovalRefused}}
	if evs := h.events(); len(evs) != 2 || !reflect.DeepEqual(evs[1], want) || h.rt.Count() != 0 {
		t.Fatalf("events %+v", evs)
	}
	if line := h.lastLine(); !strings.Contains(line, `"answer":"refused","by":"`+ownerID+`","post":"`+postID+`","reason":"not on a Sunday"`) {
		t.Fatalf("record %s", line)
	}
	if got := g.Ended(t, p.Approval); !reflect.DeepEqual(got, wire.ApprovalEnded{Approval: p.Approval, End: wire.EndRefused,
		By: ptr(ownerID), Post: ptr(postID), Reason: ptr("not on a Sunday"), Denied: ptr(wire.ApprovalRefused)}) {
		t.Fatalf("approval_ended %+v", got)
	}
}

// TestGatewayToldEveryEnd: however an approval ends on brokerd's side,
// gatewayd's connection for it is closed and approval_ended says how. The
// bxctl path records by "bxctl" and post null, as before.
func TestGatewayToldEveryEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tune  option
		end   func(h *harness, c *conn, p wire.PendingResponse)
		want  func(id uint64) wire.ApprovalEnded
		bxctl *wire.ApprovalAnswer // the Approval record's answer by bxctl
	}{
		{"bxctl approve", nil, func(h *harness, c *conn, p wire.PendingResponse) {
			h.admin(wire.Approve{Approval: p.Approval})
			c.next(h.t)
		}, func(id uint64) wire.ApprovalEnded {
			return wire.ApprovalEnded{Approval: id, End: wire.EndApproved, By: ptr("bxctl")}
		}, ptr(wire.Approved)},
		{"bxctl approve, denied on re-decision", nil, func(h *harness, c *conn, p wire.PendingResponse) {
			os.Remove(filepath.Join(h.cfg.Paths.Grants, "a.toml"))
			h.admin(wire.Approve{Approval: p.Approval})
			c.next(h.t)
		}, func(id uint64) wire.ApprovalEnded {
			return wire.ApprovalEnded{Approval: id, End: wire.EndApproved, By: ptr("bxctl"), Denied: ptr(wire.NoGrant)}
		}, ptr(wire.Approved)},
		{"bxctl refuse", nil, func(h *harness, c *conn, p wire.PendingResponse) {
			h.admin(wire.Refuse{Approval: p.Approval, Reason: ptr("not today")})
			c.next(h.t)
		}, func(id uint64) wire.ApprovalEnded {
			return wire.ApprovalEnded{Approval: id, End: wire.EndRefused, By: ptr("bxctl"), Reason: ptr("not today"), Denied: ptr(wire.ApprovalRefused)}
		}, ptr(wire.Refused)},
		{"expired", func(o *Options) { o.Config.Approvals.TTLMs = 100 }, func(h *harness, c *conn, p wire.PendingResponse) {
			c.next(h.t)
		}, func(id uint64) wire.ApprovalEnded {
			return wire.ApprovalEnded{Approval: id, End: wire.EndExpired, Denied: ptr(wire.ApprovalExpired)}
		}, nil},
		{"abandoned: loopd left", nil, func(h *harness, c *conn, p wire.PendingResponse) {
			c.Close()
		}, func(id uint64) wire.ApprovalEnded { return wire.ApprovalEnded{Approval: id, End: wire.EndAbandoned} }, nil},
		{"abandoned: brokerd stopped", nil, func(h *harness, c *conn, p wire.PendingResponse) {
			h.stop()
		}, func(id uint64) wire.ApprovalEnded { return wire.ApprovalEnded{Approval: id, End: wire.EndAbandoned} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *gatewaytest.Gatewayd
			opts := []option{withGatewayd(t, true, &g)}
			if tc.tune != nil {
				opts = append(opts, tc.tune)
			}
			h := start(t, map[string]string{"a.toml": grantAsk}, opts...)
			c, p := h.pending(askReq(t))
			req := g.Request(t)
			req.Send(t, false, wire.ApprovalPosted{Post: postID})
			tc.end(h, c, p)
			if !req.Closed(5 * time.Second) {
				t.Fatal("the request's connection stayed open")
			}
			if got, want := g.Ended(t, p.Approval), tc.want(p.Approval); !reflect.DeepEqual(got, want) {
				t.Fatalf("approval_ended %+v, want %+v", got, want)
			}
			if tc.bxctl != nil {
				ev := h.events()[1].(wire.ApprovalEvent)
				if ev.Answer != *tc.bxctl || ev.By == nil || *ev.By != "bxctl" || ev.Post != nil {
					t.Fatalf("record %+v", ev)
				}
				if line := h.lastLine(); tc.name != "bxctl approve" && !strings.Contains(line, `,"by":"bxctl","post":null,`) {
					t.Fatalf("record %s", line)
				}
			}
		})
	}
}

// TestGatewayAnswerUnrecorded: an owner's approval whose Approval record
// cannot be written denies the call (audit_unavailable), and gatewayd is
// told that outcome.
func TestGatewayAnswerUnrecorded(t *testing.T) {
	var g *gatewaytest.Gatewayd
	h := start(t, map[string]string{"a.toml": grantAsk}, withGatewayd(t, true, &g))
	c, p := h.pending(askReq(t))
	req := g.Request(t)
	h.failAudit.Store(true)
	req.Send(t, true, wire.OwnerAnswer{Answer: wire.Approved, By: ownerID, Post: postID})
	if got := c.next(t).Msg; got != (wire.DeniedResponse{Reason: wire.AuditUnavailable}) {
		t.Fatalf("loopd got %+v", got)
	}
	if got := g.Ended(t, p.Approval); !reflect.DeepEqual(got, wire.ApprovalEnded{Approval: p.Approval, End: wire.EndApproved,
		By: ptr(ownerID), Post: ptr(postID), Denied: ptr(wire.AuditUnavailable)}) {
		t.Fatalf("approval_ended %+v", got)
	}
	if h.rt.Count() != 0 {
		t.Fatal("ran without its record")
	}
}
