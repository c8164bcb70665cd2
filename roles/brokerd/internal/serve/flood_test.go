package serve

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/wire"
)

// openFDs is how many descriptors this process has open.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

var errUnderCap = errors.New("under the cap")

// TestBrokerFloodLeavesAdminServed (issue 12): cap+100 idle connections on
// broker.sock. The cap's worth are held until the request timeout closes
// them; every other one is answered with an error frame and closed at
// once, so brokerd holds no more than its cap; and admin.sock answers
// approvals quickly all the while.
func TestBrokerFloodLeavesAdminServed(t *testing.T) {
	const limit, over = 20, 100
	timeout := 1500 * time.Millisecond
	h := start(t, map[string]string{"a.toml": grantAsk}, func(o *Options) {
		o.Config.Sockets.MaxBrokerConnections = limit
		o.RequestTimeout = timeout
	})
	base := openFDs(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	flooded := time.Now()
	for range limit + over {
		c, err := net.Dial("unix", h.cfg.Sockets.Broker)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Exactly the cap's worth wait for a request; the rest are refused
	// with an error frame, then closed.
	// Read every connection at once: over the cap, the error frame then
	// the end; under it, nothing before the deadline.
	deadline := time.Now().Add(300 * time.Millisecond)
	results := make(chan error, len(conns))
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(deadline)
			env, err := wire.ReadEnvelope(c)
			if err != nil {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					results <- fmt.Errorf("a connection under the cap: %v", err)
					return
				}
				results <- errUnderCap
				return
			}
			if e, ok := env.Msg.(wire.WireError); !ok || e.Code != wire.Internal || e.Detail != "broker.sock is serving its 20 connections; try again later" {
				results <- fmt.Errorf("over the cap: %+v", env.Msg)
				return
			}
			if _, err := c.Read(make([]byte, 1)); err != io.EOF {
				results <- fmt.Errorf("an over-cap connection was left open: %v", err)
				return
			}
			results <- nil
		}()
	}
	refused := 0
	for range conns {
		switch err := <-results; err {
		case nil:
			refused++
		case errUnderCap:
		default:
			t.Fatal(err)
		}
	}
	if refused != over {
		t.Fatalf("%d connections refused, want %d", refused, over)
	}
	// brokerd's side holds the cap's worth; the test holds all of its own.
	if n := openFDs(t) - base; n > limit+over+limit+5 {
		t.Fatalf("%d more descriptors open: brokerd holds more than its cap", n)
	}
	// The owner is told once, not once per connection.
	if n := strings.Count(h.stderr.String(), "brokerd: broker.sock is serving its 20 connections: refused 1 more since the last notice\nsee docs/runbook.md#socket-full\n"); n != 1 {
		t.Fatalf("%d notices: %q", n, h.stderr.String())
	}
	// admin.sock answers at once, whatever broker.sock is doing; so would a
	// tool request at the cap, with the error frame.
	for range 5 {
		began := time.Now()
		if l, ok := h.admin(wire.Approvals{}).(wire.ApprovalList); !ok || len(l.Items) != 0 {
			t.Fatalf("approvals answered %+v", l)
		}
		if d := time.Since(began); d > 500*time.Millisecond {
			t.Fatalf("approvals took %v while broker.sock was flooded", d)
		}
	}
	if e, ok := dial(t, h.cfg.Sockets.Broker).next(t).Msg.(wire.WireError); !ok || !strings.Contains(e.Detail, "serving its 20") {
		t.Fatalf("a connection at the cap: %+v", e)
	}
	// Idle connections time out, and their slots are free again.
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(timeout + 2*time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("an idle connection: %v", err)
		}
	}
	if d := time.Since(flooded); d < timeout || d > timeout+2*time.Second {
		t.Fatalf("idle connections closed after %v, want about %v", d, timeout)
	}
	c, _ := h.pending(readReq(t, "chat-1", 2, "/data/ask/x")) // served again
	c.Close()
}

// TestAdminCapIsItsOwn: admin.sock's cap refuses its own flood and leaves
// broker.sock alone.
func TestAdminCapIsItsOwn(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto}, func(o *Options) { o.Config.Sockets.MaxAdminConnections = 2 })
	for range 2 {
		defer dial(t, h.cfg.Sockets.Admin).Close()
	}
	if e, ok := dial(t, h.cfg.Sockets.Admin).next(t).Msg.(wire.WireError); !ok || e.Detail != "admin.sock is serving its 2 connections; try again later" {
		t.Fatalf("third admin connection: %+v", e)
	}
	if _, ok := h.call(readReq(t, "s-1", 1, "/data/auto/x")).(wire.ResultResponse); !ok {
		t.Fatal("broker.sock did not answer")
	}
}

// TestDescriptorBudget: caps that could use up the descriptor limit are
// refused at start, with the runbook entry.
func TestDescriptorBudget(t *testing.T) {
	s := config.Sockets{MaxBrokerConnections: 128, MaxAdminConnections: 64}
	if err := checkBudget(s, 1024); err != nil {
		t.Fatalf("defaults under 1024: %v", err)
	}
	err := checkBudget(s, 639)
	if err == nil || !strings.Contains(err.Error(), "need 640 file descriptors") || !strings.HasSuffix(err.Error(), "see docs/runbook.md#descriptor-limit") {
		t.Fatalf("got %v", err)
	}
	limit, err := raiseNoFile()
	if err != nil || limit < 64 {
		t.Fatalf("limit %d, %v", limit, err)
	}
	s.MaxBrokerConnections = int(limit / fdsPerCall)
	dir := t.TempDir()
	cfg, err := config.Parse("b.toml", []byte("[paths]\nhome = \""+dir+"\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sockets.MaxBrokerConnections = s.MaxBrokerConnections
	if _, err := Start(Options{Config: cfg, Stderr: io.Discard}); err == nil || !strings.Contains(err.Error(), "#descriptor-limit") {
		t.Fatalf("Start with a cap of %d under a limit of %d: %v", s.MaxBrokerConnections, limit, err)
	}
}
