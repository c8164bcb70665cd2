package serve

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/wire"
)

// TestLoad: 64 clients send 200 requests each against grants that allow,
// ask and deny, while an admin client approves every ask. Every request is
// answered as its grant says, the audit log verifies with exactly the
// expected records, and no goroutine is left once serve stops.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const clients, perClient = 64, 200
	goroutines := runtime.NumGoroutine()
	// The approver approves every pending call at once: up to one per
	// client, over admin.sock's default cap.
	h := start(t, map[string]string{"a.toml": grantAuto, "b.toml": grantAsk, "c.toml": grantDeny},
		func(o *Options) { o.Config.Sockets.MaxAdminConnections = 4 * clients })
	began := time.Now()

	stopApprover := make(chan struct{})
	var approved atomic.Int64
	var approverWG sync.WaitGroup
	approverWG.Go(func() { h.approveAll(t, stopApprover, &approved) })

	var want [3]int64 // allowed, asked, denied
	var got [3]atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			session := fmt.Sprintf("load-%d", c)
			for i := range perClient {
				kind := i % 3
				path := [3]string{"/data/auto/f", "/data/ask/f", "/data/deny/f"}[kind]
				if err := h.loadCall(readReq(t, session, uint64(i), path), kind); err != nil {
					t.Error(err)
					return
				}
				got[kind].Add(1)
			}
		})
	}
	for i := range clients * perClient {
		want[i%perClient%3]++
	}
	wg.Wait()
	close(stopApprover)
	approverWG.Wait()
	elapsed := time.Since(began)
	if t.Failed() {
		return
	}
	for k := range want {
		if got[k].Load() != want[k] {
			t.Fatalf("answered %d of kind %d, want %d", got[k].Load(), k, want[k])
		}
	}
	if approved.Load() != want[1] {
		t.Fatalf("approved %d, want %d", approved.Load(), want[1])
	}
	h.stop()

	rep, err := audit.VerifyDir(filepath.Join(h.cfg.Paths.Home, "audit"))
	if err != nil || rep.Failure != nil || len(rep.Abandoned) != 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// The chain verified, so every line is a well-formed record: counting
	// the event tags is counting the records (and much cheaper, under
	// -race, than parsing 25,600 lines again).
	decisions, approvals, results := h.countEvents("decision"), h.countEvents("approval"), h.countEvents("result")
	total := want[0] + want[1] + want[2]
	if decisions != total || approvals != want[1] || results != want[0]+want[1] || rep.Records != uint64(total+want[1]+want[0]+want[1]) {
		t.Fatalf("records: %d decisions, %d approvals, %d results (%d verified); want %d, %d, %d",
			decisions, approvals, results, rep.Records, total, want[1], want[0]+want[1])
	}
	if int64(h.rt.Count()) != want[0]+want[1] {
		t.Fatalf("%d runs", h.rt.Count())
	}
	t.Logf("%d requests in %v (%.0f/s)", total, elapsed, float64(total)/elapsed.Seconds())

	// Every goroutine serve started has ended. The runtime's own may take a
	// moment to settle.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
		}
	}
}

// loadCall makes one call and checks its answer against kind: 0 allowed
// (a result), 1 asked (pending, then a result once approved), 2 denied.
func (h *harness) loadCall(req wire.ToolRequest, kind int) error {
	c, err := dialQuiet(h.cfg.Sockets.Broker)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := wire.WriteEnvelope(c, wire.Request(1, req)); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	env, err := wire.ReadEnvelope(c.r)
	if err != nil {
		return err
	}
	if kind == 1 {
		if _, ok := env.Msg.(wire.PendingResponse); !ok || env.Final {
			return fmt.Errorf("%v: got %+v, want pending", req, env)
		}
		if env, err = wire.ReadEnvelope(c.r); err != nil {
			return err
		}
	}
	var ok bool
	switch kind {
	case 0, 1:
		_, ok = env.Msg.(wire.ResultResponse)
	case 2:
		ok = env.Msg == wire.DeniedResponse{Reason: wire.DeniedByGrant}
	}
	if !ok || !env.Final {
		return fmt.Errorf("%v: got %+v", req, env)
	}
	return nil
}

// approveAll approves every pending call until stop, several at a time.
func (h *harness) approveAll(t *testing.T, stop <-chan struct{}, approved *atomic.Int64) {
	seen := map[uint64]bool{}
	for {
		select {
		case <-stop:
			return
		default:
		}
		list, err := h.adminQuiet(wire.Approvals{})
		if err != nil {
			t.Error(err)
			return
		}
		var ids []uint64
		for _, it := range list.(wire.ApprovalList).Items {
			if !seen[it.Approval] {
				seen[it.Approval] = true
				ids = append(ids, it.Approval)
			}
		}
		if len(ids) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				got, err := h.adminQuiet(wire.Approve{Approval: id})
				if err != nil || got != (wire.ApproveResult{Outcome: wire.OutcomeAsk{}}) {
					t.Errorf("approve %d: %+v %v", id, got, err)
					return
				}
				approved.Add(1)
			})
		}
		wg.Wait()
	}
}

// countEvents counts the records of one event type in the audit log.
func (h *harness) countEvents(typ string) int64 {
	h.t.Helper()
	names, _ := filepath.Glob(filepath.Join(h.cfg.Paths.Home, "audit", "*.jsonl"))
	var n int
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			h.t.Fatal(err)
		}
		n += bytes.Count(data, []byte(`,"event":{"type":"`+typ+`",`))
	}
	return int64(n)
}

// dialQuiet and adminQuiet return errors instead of failing the test, for
// use off the test's goroutine.
func dialQuiet(path string) (*conn, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	return &conn{c, bufio.NewReader(c)}, nil
}

func (h *harness) adminQuiet(msg wire.Message) (wire.Message, error) {
	c, err := dialQuiet(h.cfg.Sockets.Admin)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := wire.WriteEnvelope(c, wire.Request(1, msg)); err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	env, err := wire.ReadEnvelope(c.r)
	if err != nil {
		return nil, err
	}
	return env.Msg, nil
}
