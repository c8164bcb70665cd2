package egress_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"boxmaker/roles/brokerd/internal/egress"
)

// TestAllowedEmbeddedIPv4 is the table: the RFCs' own examples of each IPv6
// form that carries an IPv4 address, and the same forms aimed at the host's
// networks. Every form is judged by the IPv4 address it carries.
func TestAllowedEmbeddedIPv4(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
		why  string
	}{
		// RFC 4291 §2.2's examples, and §2.5.5.1's deprecated form aimed home.
		{"::13.1.68.3", true, "IPv4-compatible, RFC 4291 §2.2"},
		{"::ffff:129.144.52.38", true, "IPv4-mapped, RFC 4291 §2.2"},
		{"::127.0.0.1", false, "IPv4-compatible loopback"},
		{"::10.0.0.1", false, "IPv4-compatible private"},
		{"::169.254.169.254", false, "IPv4-compatible metadata service"},
		{"::100.100.100.100", false, "IPv4-compatible tailnet"},
		{"::", false, "unspecified"},
		{"::1", false, "loopback"},
		{"::ffff:192.168.1.1", false, "IPv4-mapped private"},
		// RFC 2765 §2.1 (SIIT): ::ffff:0:a.b.c.d.
		{"::ffff:0:127.0.0.1", false, "IPv4-translated loopback"},
		{"::ffff:0:10.1.2.3", false, "IPv4-translated private"},
		{"::ffff:0:8.8.8.8", true, "IPv4-translated public"},
		// RFC 6052 §2.4's example with the well-known prefix (192.0.2.33 is
		// documentation), and the prefix aimed home and away.
		{"64:ff9b::192.0.2.33", false, "NAT64 WKP, RFC 6052 §2.4"},
		{"64:ff9b::c000:221", false, "the same, written in hex"},
		{"64:ff9b::10.0.0.1", false, "NAT64 WKP private"},
		{"64:ff9b::127.0.0.1", false, "NAT64 WKP loopback"},
		{"64:ff9b::8.8.8.8", true, "NAT64 WKP public"},
		// RFC 6052 §2.4's network-specific examples sit in 2001:db8::/32.
		{"2001:db8:c000:221::", false, "NSP /32, RFC 6052 §2.4"},
		{"2001:db8:100:c000:2:2100::", false, "NSP /56, RFC 6052 §2.4"},
		// RFC 8215: local use; the layout is the network's choice.
		{"64:ff9b:1::8.8.8.8", false, "local-use NAT64, /96 layout"},
		{"64:ff9b:1:808:8:800::", false, "local-use NAT64, /48 layout"},
		// RFC 3056 §2 (6to4: 2002:V4ADDR::/48), RFC 3068's relay, and home.
		{"2002:c058:6301::", true, "6to4 of 192.88.99.1, RFC 3068"},
		{"2002:808:808::1", true, "6to4 public"},
		{"2002:7f00:1::1", false, "6to4 loopback"},
		{"2002:a00:1:1::1", false, "6to4 private"},
		{"2002:a9fe:a9fe::", false, "6to4 metadata service"},
		{"2002:c000:221::", false, "6to4 documentation"},
		// RFC 4380 §4's example: server 65.54.227.120, client 192.0.2.45
		// (documentation), stored inverted.
		{"2001:0000:4136:e378:8000:63bf:3fff:fdd2", false, "Teredo, RFC 4380 §4"},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", true, "Teredo, client 8.8.8.8"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false, "Teredo, client 127.0.0.1"},
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", false, "Teredo, client 10.0.0.1"},
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", false, "Teredo, server 10.0.0.1"},
		{"3ffe:831f:4136:e378:8000:63bf:f7f7:f7f7", false, "pre-RFC Teredo prefix"},
		// RFC 5214 §6.1 (ISATAP: [00|02]00:5efe:V4 after any /64).
		{"2a00:1450:4001:81c:200:5efe:808:808", true, "ISATAP, public"},
		{"2a00:1450:4001:81c:0:5efe:a00:1", false, "ISATAP, private"},
		{"2a00:1450:4001:81c:200:5efe:7f00:1", false, "ISATAP, loopback"},
		{"2a00:1450:4001:81c:300:5efe:a9fe:a9fe", false, "ISATAP, u/g bits set"},
		{"fe80::5efe:c000:201", false, "ISATAP link-local"},
		// An ISATAP identifier after a prefix that embeds a public address.
		{"2002:808:808:1:0:5efe:a00:1", false, "6to4 public, ISATAP private"},
		{"2002:808:808:1:0:5efe:808:404", true, "6to4 public, ISATAP public"},
		// Plain addresses, either side.
		{"2a00:1450:4001:81c::200e", true, "global"},
		{"2606:4700:4700::1111", true, "global"},
		{"fd00::1", false, "ULA"},
		{"fe80::1%eth0", false, "zoned"},
		{"3fff::1", false, "documentation, RFC 9637"},
		{"2001:2::1", false, "benchmarking"},
		{"2001:1::1", false, "PCP anycast: the local gateway (RFC 7723)"},
		{"2001:1::2", false, "TURN anycast (RFC 8155)"},
		{"2001:3::1", false, "IETF protocol assignments, 2001::/23"},
		{"5f00::1", false, "SRv6 SIDs"},
		{"8.8.8.8", true, "IPv4 public"},
		{"10.0.0.1", false, "IPv4 private"},
	} {
		if got := egress.Allowed(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Allowed(%s) = %v, want %v (%s)", tc.addr, got, tc.want, tc.why)
		}
	}
}

// notPublic is the naive oracle: the IPv4 blocks that are not the public
// internet (the IANA special-purpose registry that matters here, and
// RFC 1918, loopback, link-local, multicast, reserved), written out again
// rather than taken from the code under test.
var notPublic = []string{
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
	"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
}

func oracle(v4 [4]byte) bool {
	a := netip.AddrFrom4(v4)
	for _, p := range notPublic {
		if netip.MustParsePrefix(p).Contains(a) {
			return false
		}
	}
	return true
}

// forms embed an IPv4 address in each IPv6 form, by formatting text as the
// RFCs write it, not by the code under test's byte offsets.
var forms = []struct {
	name  string
	embed func(r *rand.Rand, v [4]byte) string
}{
	{"mapped", func(_ *rand.Rand, v [4]byte) string { return fmt.Sprintf("::ffff:%d.%d.%d.%d", v[0], v[1], v[2], v[3]) }},
	{"compatible", func(_ *rand.Rand, v [4]byte) string { return fmt.Sprintf("::%d.%d.%d.%d", v[0], v[1], v[2], v[3]) }},
	{"translated", func(_ *rand.Rand, v [4]byte) string {
		return fmt.Sprintf("::ffff:0:%d.%d.%d.%d", v[0], v[1], v[2], v[3])
	}},
	{"nat64", func(_ *rand.Rand, v [4]byte) string {
		return fmt.Sprintf("64:ff9b::%d.%d.%d.%d", v[0], v[1], v[2], v[3])
	}},
	{"6to4", func(r *rand.Rand, v [4]byte) string {
		return fmt.Sprintf("2002:%02x%02x:%02x%02x:%x::%x", v[0], v[1], v[2], v[3], r.IntN(1<<16), r.IntN(1<<16))
	}},
	{"teredo-client", func(r *rand.Rand, v [4]byte) string {
		// Server 65.54.227.120 (RFC 4380's example), random flags and port.
		return fmt.Sprintf("2001:0:4136:e378:%x:%x:%02x%02x:%02x%02x", r.IntN(1<<16), r.IntN(1<<16),
			v[0]^0xff, v[1]^0xff, v[2]^0xff, v[3]^0xff)
	}},
	{"teredo-server", func(r *rand.Rand, v [4]byte) string {
		// Client 8.8.8.8, inverted.
		return fmt.Sprintf("2001:0:%02x%02x:%02x%02x:%x:%x:f7f7:f7f7", v[0], v[1], v[2], v[3], r.IntN(1<<16), r.IntN(1<<16))
	}},
	{"isatap", func(r *rand.Rand, v [4]byte) string {
		return fmt.Sprintf("2a00:1450:4001:%x:%s:5efe:%d.%d.%d.%d", r.IntN(1<<16), []string{"0", "200"}[r.IntN(2)], v[0], v[1], v[2], v[3])
	}},
}

// randomV4 is uniform half the time; otherwise inside, or just outside, a
// block the oracle names, so that both verdicts come up often.
func randomV4(r *rand.Rand) [4]byte {
	var v [4]byte
	if r.IntN(2) == 0 {
		for i := range v {
			v[i] = byte(r.IntN(256))
		}
		return v
	}
	p := netip.MustParsePrefix(notPublic[r.IntN(len(notPublic))])
	base := p.Addr().As4()
	host := uint32(r.Uint64()) & (1<<(32-p.Bits()) - 1)
	n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	switch r.IntN(4) {
	case 0:
		n-- // just below
	case 1:
		n += 1 << (32 - p.Bits()) // just above
	default:
		n += host
	}
	return [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}

// TestAllowedEmbeddedMatchesIPv4 is the property: an IPv4 address embedded in
// any form gets the verdict the IPv4 address gets, which is the oracle's.
func TestAllowedEmbeddedMatchesIPv4(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 14))
	seen := map[bool]int{}
	for range 20000 {
		v := randomV4(r)
		want := oracle(v)
		seen[want]++
		if got := egress.Allowed(netip.AddrFrom4(v)); got != want {
			t.Fatalf("Allowed(%v) = %v, the oracle says %v", netip.AddrFrom4(v), got, want)
		}
		for _, f := range forms {
			s := f.embed(r, v)
			if got := egress.Allowed(netip.MustParseAddr(s)); got != want {
				t.Fatalf("%s: Allowed(%s) = %v, but %v gets %v", f.name, s, got, netip.AddrFrom4(v), want)
			}
		}
	}
	if seen[true] < 1000 || seen[false] < 1000 {
		t.Fatalf("the draw is lopsided: %v", seen)
	}
}

// TestLocalUseNAT64IsNeverAllowed: whatever layout (RFC 6052 §2.2) a
// public address is written in, local-use NAT64 is refused, because the same
// bits name another IPv4 address under another layout.
func TestLocalUseNAT64IsNeverAllowed(t *testing.T) {
	r := rand.New(rand.NewPCG(8215, 6052))
	for range 2000 {
		v := randomV4(r)
		for _, s := range []string{
			fmt.Sprintf("64:ff9b:1:%02x%02x:%02x:%02x00::", v[0], v[1], v[2], v[3]),  // /48
			fmt.Sprintf("64:ff9b:1:%02x:%02x:%02x%02x::", v[0], v[1], v[2], v[3]),    // /56
			fmt.Sprintf("64:ff9b:1::%02x:%02x%02x:%02x00:0", v[0], v[1], v[2], v[3]), // /64
			fmt.Sprintf("64:ff9b:1::%d.%d.%d.%d", v[0], v[1], v[2], v[3]),            // /96
		} {
			if egress.Allowed(netip.MustParseAddr(s)) {
				t.Fatalf("Allowed(%s)", s)
			}
		}
	}
}
