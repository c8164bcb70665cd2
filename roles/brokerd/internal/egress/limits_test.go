package egress_test

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/egress"
)

// TestAToolHoldsABoundedNumberOfConnections: a tool that opens connection
// after connection and never finishes them (slowloris) holds at most
// MaxConns of brokerd's; one more is closed at once and said why, the
// others still work, and a slot freed is usable again.
func TestAToolHoldsABoundedNumberOfConnections(t *testing.T) {
	target := echo(t)
	defer egress.SetTestHosts(map[string]netip.AddrPort{"api.example.com": target}, nil)()
	p, err := egress.Start(t.TempDir(), []string{"api.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var held []net.Conn
	for range egress.MaxConns - 1 {
		c, err := net.Dial("unix", p.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte{5}) // half a greeting, and nothing more
		held = append(held, c)
	}
	// The last slot: a connection that works while the others stall.
	start := time.Now()
	rep, c := ask(t, p.Path(), 3, []byte("api.example.com"), 443)
	if rep != 0 || time.Since(start) > 2*time.Second {
		t.Fatalf("a connection beside %d stalled ones: reply %d after %v", len(held), rep, time.Since(start))
	}
	// All MaxConns are taken now (the relay holds the last until read).
	extra, err := net.Dial("unix", p.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection %d: read %d, %v; want it closed at once", egress.MaxConns+1, n, err)
	}
	const why = "more than 64 connections at once from the tool; see docs/runbook.md#egress-too-many-connections"
	if refused := p.Refusals(); len(refused) != 1 || refused[0] != why {
		t.Errorf("refusals %q, want %q", refused, why)
	}
	c.Write(clientHello(t, "api.example.com"))
	if b, _ := io.ReadAll(c); string(b) != "hello\n" {
		t.Errorf("relayed %q", b)
	}
	// A slot freed is taken again (the proxy's side ends a moment after
	// the tool's).
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for !greeted(p.Path()) {
		if time.Now().After(deadline) {
			t.Fatalf("no slot after closing one (%q)", p.Refusals())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if refused := p.Refusals(); len(refused) != 1 || !strings.HasPrefix(refused[0], "more than") {
		t.Errorf("a refusal per connection over the bound: %q", refused)
	}
}

// greeted reports whether a new connection gets the proxy's SOCKS5
// greeting.
func greeted(path string) bool {
	c, err := net.Dial("unix", path)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var greet [2]byte
	_, err = c.Write([]byte{5, 1, 0})
	if err == nil {
		_, err = io.ReadFull(c, greet[:])
	}
	return err == nil && greet == [2]byte{5, 0}
}
