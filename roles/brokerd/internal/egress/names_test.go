package egress_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/egress"
)

// What a tool's next connection can name (issue 29): a redirect to a
// private address is only passed on to the tool, and the connection that
// follows it goes through the SOCKS check again. Each row is a SOCKS5
// request as the tool can send it; none may reach anything but a public
// address of a granted host.

// stubResolver answers names of *.example.com with fixed addresses and
// counts the lookups; anything else does not resolve.
type stubResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	calls   map[string]int
}

func (s *stubResolver) lookup(host string) ([]netip.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[host]++
	if a, ok := s.answers[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestTheSOCKSCheckRefusesPrivateDestinations(t *testing.T) {
	res := &stubResolver{calls: map[string]int{}, answers: map[string][]netip.Addr{
		"loopback.example.com":    addrs("127.0.0.1"),
		"loopback6.example.com":   addrs("::1"),
		"metadata.example.com":    addrs("169.254.169.254"),
		"metadata6.example.com":   addrs("fd00:ec2::254"),
		"linklocal6.example.com":  addrs("fe80::1"),
		"private.example.com":     addrs("10.0.0.1", "172.16.0.1", "192.168.1.1"),
		"cgnat.example.com":       addrs("100.64.0.1"),
		"multicast.example.com":   addrs("224.0.0.251", "ff02::fb"),
		"unspecified.example.com": addrs("0.0.0.0", "::"),
		"broadcast.example.com":   addrs("255.255.255.255"),
		"mapped.example.com":      addrs("::ffff:127.0.0.1", "::ffff:169.254.169.254"),
		"compat.example.com":      addrs("::10.0.0.1"),
		"nat64.example.com":       addrs("64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe"),
		"nat64local.example.com":  addrs("64:ff9b:1::a00:1"),
		"6to4.example.com":        addrs("2002:7f00:1::1"),
		"127.0.0.1.example.com":   addrs("127.0.0.1"),
		"zoned.example.com":       {netip.MustParseAddr("fe80::1").WithZone("eth0")},
		"nothing.example.com":     {},
	}}
	defer egress.SetTestResolver(res.lookup, nil)()
	notPublic := "resolves only to addresses that are not public"
	for _, tc := range []struct {
		name string
		atyp byte
		addr []byte
		port uint16
		rep  byte
		why  string
	}{
		// Literals, in every form a URL parser or resolver might read as one.
		{"IPv4", 3, []byte("127.0.0.1"), 443, 2, "127.0.0.1 is an IP address"},
		{"the metadata address", 3, []byte("169.254.169.254"), 443, 2, "169.254.169.254 is an IP address"},
		{"IPv6 loopback", 3, []byte("::1"), 443, 2, "::1 is an IP address"},
		{"IPv6 in brackets", 3, []byte("[::1]"), 443, 2, "needs at least two labels"},
		{"IPv4-mapped", 3, []byte("::ffff:127.0.0.1"), 443, 2, "is an IP address"},
		{"NAT64", 3, []byte("64:ff9b::7f00:1"), 443, 2, "is an IP address"},
		{"a zoned link-local", 3, []byte("fe80::1%lo"), 443, 2, "is an IP address"},
		{"decimal", 3, []byte("2130706433"), 443, 2, "needs at least two labels"},
		{"hex", 3, []byte("0x7f000001"), 443, 2, "needs at least two labels"},
		{"dotted octal", 3, []byte("0177.0.0.1"), 443, 2, "is an IP address, not a host name"},
		{"dotted hex", 3, []byte("0x7f.0.0.1"), 443, 2, "is an IP address, not a host name"},
		{"short form", 3, []byte("127.1"), 443, 2, "is an IP address, not a host name"},
		{"hex last label", 3, []byte("a.example.0x7f"), 443, 2, "is an IP address, not a host name"},
		{"a trailing dot", 3, []byte("127.0.0.1."), 443, 2, "has a label that is not 1 to 63 bytes"},
		{"a granted name with a trailing dot", 3, []byte("loopback.example.com."), 443, 2, "has a label that is not 1 to 63 bytes"},
		{"localhost", 3, []byte("localhost"), 443, 2, "needs at least two labels"},
		{"percent-encoded", 3, []byte("%31%32%37.0.0.1"), 443, 2, "has a byte outside"},
		{"a port in the name", 3, []byte("loopback.example.com:443"), 443, 2, "has a byte outside"},
		{"a NUL in the name", 3, []byte("api.example.com\x00.evil.org"), 443, 2, "has a byte outside"},
		{"capitals", 3, []byte("LOOPBACK.example.com"), 443, 2, "has a byte outside"},
		{"an IPv4 address type", 1, []byte{127, 0, 0, 1}, 443, 8, "an IP address instead of a host name"},
		{"an IPv6 address type", 4, netip.MustParseAddr("::ffff:127.0.0.1").AsSlice(), 443, 8, "an IP address instead of a host name"},
		// Ports.
		{"port 80", 3, []byte("loopback.example.com"), 80, 2, "port 80: only port 443 is allowed"},
		{"port 0", 3, []byte("loopback.example.com"), 0, 2, "port 0: only port 443 is allowed"},
		{"port 8443", 3, []byte("loopback.example.com"), 8443, 2, "port 8443: only port 443 is allowed"},
		// Granted names that resolve to what may not be dialled.
		{"loopback", 3, []byte("loopback.example.com"), 443, 2, notPublic + " (127.0.0.1)"},
		{"IPv6 loopback by name", 3, []byte("loopback6.example.com"), 443, 2, notPublic + " (::1)"},
		{"metadata", 3, []byte("metadata.example.com"), 443, 2, notPublic + " (169.254.169.254)"},
		{"IPv6 metadata", 3, []byte("metadata6.example.com"), 443, 2, notPublic + " (fd00:ec2::254)"},
		{"IPv6 link-local", 3, []byte("linklocal6.example.com"), 443, 2, notPublic + " (fe80::1)"},
		{"RFC 1918", 3, []byte("private.example.com"), 443, 2, notPublic + " (10.0.0.1, 172.16.0.1, 192.168.1.1)"},
		{"CGNAT", 3, []byte("cgnat.example.com"), 443, 2, notPublic + " (100.64.0.1)"},
		{"multicast", 3, []byte("multicast.example.com"), 443, 2, notPublic + " (224.0.0.251, ff02::fb)"},
		{"unspecified", 3, []byte("unspecified.example.com"), 443, 2, notPublic + " (0.0.0.0, ::)"},
		{"broadcast", 3, []byte("broadcast.example.com"), 443, 2, notPublic + " (255.255.255.255)"},
		{"IPv4-mapped by name", 3, []byte("mapped.example.com"), 443, 2, notPublic + " (::ffff:127.0.0.1, ::ffff:169.254.169.254)"},
		{"IPv4-compatible by name", 3, []byte("compat.example.com"), 443, 2, notPublic + " (::a00:1)"},
		{"NAT64 by name", 3, []byte("nat64.example.com"), 443, 2, notPublic + " (64:ff9b::7f00:1, 64:ff9b::a9fe:a9fe)"},
		{"local-use NAT64", 3, []byte("nat64local.example.com"), 443, 2, notPublic + " (64:ff9b:1::a00:1)"},
		{"6to4 of loopback", 3, []byte("6to4.example.com"), 443, 2, notPublic + " (2002:7f00:1::1)"},
		{"a name made of an address", 3, []byte("127.0.0.1.example.com"), 443, 2, notPublic + " (127.0.0.1)"},
		{"a zoned answer", 3, []byte("zoned.example.com"), 443, 2, notPublic + " (fe80::1%eth0)"},
		{"no answer", 3, []byte("nothing.example.com"), 443, 2, notPublic + " ()"},
		{"no such name", 3, []byte("missing.example.com"), 443, 4, "missing.example.com does not resolve"},
	} {
		// A proxy for each row: a proxy keeps its first 16 refusals.
		p, err := egress.Start(t.TempDir(), []string{"*.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		rep, _ := ask(t, p.Path(), tc.atyp, tc.addr, tc.port)
		refusals := p.Refusals()
		if rep != tc.rep || len(refusals) != 1 || !strings.Contains(refusals[0], tc.why) {
			t.Errorf("%s: reply %d, refusals %q; want %d and %q", tc.name, rep, refusals, tc.rep, tc.why)
		}
		p.Close()
	}
}

// TestARebindingNameIsDialledAsChecked: the proxy resolves a name once per
// connection and dials the address it checked, so a name whose answer
// turns private after the check reaches nothing private; the next
// connection resolves again and is refused.
func TestARebindingNameIsDialledAsChecked(t *testing.T) {
	target := echo(t)
	public := netip.MustParseAddrPort("93.184.216.34:443")
	var mu sync.Mutex
	calls := 0
	lookup := func(host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return addrs("93.184.216.34"), nil
		}
		return addrs("127.0.0.1"), nil
	}
	defer egress.SetTestResolver(lookup, map[netip.AddrPort]netip.AddrPort{public: target})()
	p, err := egress.Start(t.TempDir(), []string{"rebind.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rep, c := ask(t, p.Path(), 3, []byte("rebind.example.com"), 443)
	if rep != 0 {
		t.Fatalf("first connection: reply %d (%q)", rep, p.Refusals())
	}
	c.Write(clientHello(t, "rebind.example.com"))
	if b, _ := io.ReadAll(c); string(b) != "hello\n" {
		t.Fatalf("relayed %q", b)
	}
	mu.Lock()
	if calls != 1 {
		t.Errorf("%d lookups for one connection", calls)
	}
	mu.Unlock()
	rep, _ = ask(t, p.Path(), 3, []byte("rebind.example.com"), 443)
	if refused := p.Refusals(); rep != 2 || len(refused) != 1 || refused[0] != "rebind.example.com resolves only to addresses that are not public (127.0.0.1)" {
		t.Errorf("second connection: reply %d, refusals %q", rep, refused)
	}
}

// TestOnlyTheCheckedAddressIsDialled: of a name's answers, only the public
// ones are dialled, even when a private one comes first.
func TestOnlyTheCheckedAddressIsDialled(t *testing.T) {
	target := echo(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	res := &stubResolver{calls: map[string]int{}, answers: map[string][]netip.Addr{
		"mixed.example.com": addrs("127.0.0.1", "10.0.0.1", "93.184.216.34", "::1"),
	}}
	// 127.0.0.1:443 would be the listener's address only if dialled as
	// it came; reroute knows only the public one.
	defer egress.SetTestResolver(res.lookup, map[netip.AddrPort]netip.AddrPort{
		netip.MustParseAddrPort("93.184.216.34:443"): target,
		netip.MustParseAddrPort("127.0.0.1:443"):     netip.MustParseAddrPort(ln.Addr().String()),
	})()
	p, err := egress.Start(t.TempDir(), []string{"*.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rep, c := ask(t, p.Path(), 3, []byte("mixed.example.com"), 443)
	if rep != 0 {
		t.Fatalf("reply %d (%q)", rep, p.Refusals())
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second)) // the listener never answers
	c.Write(clientHello(t, "mixed.example.com"))
	if b, _ := io.ReadAll(c); string(b) != "hello\n" {
		t.Fatalf("relayed %q", b)
	}
	if n := res.calls["mixed.example.com"]; n != 1 {
		t.Errorf("%d lookups", n)
	}
}
