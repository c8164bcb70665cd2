package egress_test

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/egress"
)

// echo is a TCP server that answers every connection with "hello\n", and
// reads what it is sent until the other side is done.
func echo(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello\n")
			c.(*net.TCPConn).CloseWrite()
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

// ask sends one SOCKS5 CONNECT and returns the reply code, and the
// connection for reading on when it is 0.
func ask(t *testing.T, path string, atyp byte, addr []byte, port uint16) (byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Write([]byte{5, 1, 0})
	var greet [2]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil || greet != [2]byte{5, 0} {
		t.Fatalf("greeting %v %v", greet, err)
	}
	req := []byte{5, 1, 0, atyp}
	if atyp == 3 {
		req = append(req, byte(len(addr)))
	}
	req = binary.BigEndian.AppendUint16(append(req, addr...), port)
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	return rep[1], c
}

func TestProxyAllowsOnlyTheGrantsHostsByName(t *testing.T) {
	target := echo(t)
	restore := egress.SetTestHosts(
		map[string]netip.AddrPort{"api.example.com": target, "other.example.org": target},
		map[string][]netip.Addr{
			"private.example.com": {netip.MustParseAddr("10.1.2.3")},
			"tailnet.example.com": {netip.MustParseAddr("100.100.100.100")},
			"mapped.example.com":  {netip.MustParseAddr("::ffff:192.168.1.1")},
			"mixed.example.com":   {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("fd00::1")},
		})
	defer restore()
	p, err := egress.Start(t.TempDir(), []string{"*.example.com", "example.net"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if fi, err := os.Stat(p.Path()); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v %v", fi, err)
	}

	rep, c := ask(t, p.Path(), 3, []byte("api.example.com"), 443)
	if rep != 0 {
		t.Fatalf("allowed host: reply %d (%v)", rep, p.Refusals())
	}
	c.Write(clientHello(t, "api.example.com")) // the relay's first look (sni.go)
	if b, _ := io.ReadAll(c); string(b) != "hello\n" {
		t.Fatalf("relayed %q", b)
	}

	for _, tc := range []struct {
		name string
		atyp byte
		addr []byte
		port uint16
		rep  byte
		why  string
	}{
		{"another host", 3, []byte("other.example.org"), 443, 2, "other.example.org is not among the grant's hosts (*.example.com, example.net)"},
		{"the wildcard's base", 3, []byte("example.com"), 443, 2, "example.com is not among the grant's hosts"},
		{"port 80", 3, []byte("api.example.com"), 80, 2, "api.example.com port 80: only port 443 is allowed"},
		{"an IP literal as a name", 3, []byte("10.0.0.1"), 443, 2, "10.0.0.1 is an IP address"},
		{"an IPv6 literal as a name", 3, []byte("::1"), 443, 2, "::1 is an IP address"},
		{"a numeric name", 3, []byte("a.0x7f"), 443, 2, "is not a valid host name: it is an IP address"},
		{"uppercase", 3, []byte("API.example.com"), 443, 2, "is not a valid host name"},
		{"an IPv4 address", 1, []byte{93, 184, 216, 34}, 443, 8, "an IP address instead of a host name"},
		{"an IPv6 address", 4, make([]byte, 16), 443, 8, "an IP address instead of a host name"},
		{"a private address", 3, []byte("private.example.com"), 443, 2, "private.example.com resolves only to addresses that are not public (10.1.2.3)"},
		{"the tailnet", 3, []byte("tailnet.example.com"), 443, 2, "(100.100.100.100)"},
		{"a mapped private address", 3, []byte("mapped.example.com"), 443, 2, "(::ffff:192.168.1.1)"},
		{"loopback and ULA", 3, []byte("mixed.example.com"), 443, 2, "(127.0.0.1, fd00::1)"},
	} {
		before := len(p.Refusals())
		rep, _ := ask(t, p.Path(), tc.atyp, tc.addr, tc.port)
		refusals := p.Refusals()
		if rep != tc.rep || len(refusals) != before+1 || !strings.Contains(refusals[before], tc.why) {
			t.Errorf("%s: reply %d, refusals %q; want %d and %q", tc.name, rep, refusals[before:], tc.rep, tc.why)
		}
	}
}

// TestProxyJudgesEmbeddedIPv4: names that resolve to IPv6 forms carrying an
// IPv4 address of the host's networks are refused like that IPv4 address.
func TestProxyJudgesEmbeddedIPv4(t *testing.T) {
	restore := egress.SetTestHosts(nil, map[string][]netip.Addr{
		"compat.example.com": {netip.MustParseAddr("::127.0.0.1")},
		"siit.example.com":   {netip.MustParseAddr("::ffff:0:169.254.169.254")},
		"nat64.example.com":  {netip.MustParseAddr("64:ff9b::10.0.0.1")},
		"6to4.example.com":   {netip.MustParseAddr("2002:a64:6464::1")},
		"teredo.example.com": {netip.MustParseAddr("2001:0:4136:e378:8000:63bf:80ff:fffe")},
		"isatap.example.com": {netip.MustParseAddr("2a00:1450:4001:81c:200:5efe:192.168.1.1")},
	})
	defer restore()
	p, err := egress.Start(t.TempDir(), []string{"*.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct{ host, why string }{
		{"compat.example.com", "(::7f00:1)"},
		{"siit.example.com", "(::ffff:0:a9fe:a9fe)"},
		{"nat64.example.com", "(64:ff9b::a00:1)"},
		{"6to4.example.com", "(2002:a64:6464::1)"},
		{"teredo.example.com", "(2001:0:4136:e378:8000:63bf:80ff:fffe)"},
		{"isatap.example.com", "(2a00:1450:4001:81c:200:5efe:c0a8:101)"},
	} {
		before := len(p.Refusals())
		rep, _ := ask(t, p.Path(), 3, []byte(tc.host), 443)
		refusals := p.Refusals()
		want := tc.host + " resolves only to addresses that are not public " + tc.why
		if rep != 2 || len(refusals) != before+1 || refusals[before] != want {
			t.Errorf("%s: reply %d, refusals %q; want 2 and %q", tc.host, rep, refusals[before:], want)
		}
	}
}

func TestCloseCutsConnectionsAndRemovesTheSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			held <- c // never answers: only Close ends the relay
		}
	}()
	restore := egress.SetTestHosts(map[string]netip.AddrPort{"slow.example.com": netip.MustParseAddrPort(ln.Addr().String())}, nil)
	defer restore()
	p, err := egress.Start("", []string{"slow.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	rep, c := ask(t, p.Path(), 3, []byte("slow.example.com"), 443)
	if rep != 0 {
		t.Fatalf("reply %d", rep)
	}
	defer (<-held).Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection survived Close")
	}
	if _, err := os.Stat(p.Path()); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

func TestAllowed(t *testing.T) {
	for s, want := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1:248:1893:25c8:1946": true, "1.1.1.1": true,
		"127.0.0.1": false, "10.0.0.1": false, "172.16.0.1": false, "192.168.0.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "100.127.255.255": false, "0.0.0.0": false,
		"0.1.2.3": false, "224.0.0.1": false, "255.255.255.255": false, "240.0.0.1": false,
		"198.18.0.1": false, "192.0.2.1": false,
		"::": false, "::1": false, "fe80::1": false, "fc00::1": false, "fd12::1": false, "ff02::1": false,
		"::ffff:10.0.0.1": false, "::ffff:93.184.216.34": true, "64:ff9b::a00:1": false,
		"2002:a00:1::": false, "2001:db8::1": false, "fec0::1": false,
	} {
		if got := egress.Allowed(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
}
