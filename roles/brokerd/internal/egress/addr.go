package egress

import "net/netip"

// forbidden are address blocks the proxy never dials, beyond what netip's
// predicates cover (loopback, private, link-local, multicast, unspecified):
// each either reaches the host's own networks or can be turned into an
// address that does. IPv6 blocks that embed an IPv4 address are not here but
// in embeddings: they are judged by the address they embed.
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT: the tailnet lives here
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	// Local-use NAT64 (RFC 8215): the network picks the prefix length, so
	// where the IPv4 address sits (RFC 6052 §2.2: after /48, /56, /64 or
	// /96) cannot be known here, and the same address names a different
	// IPv4 address under each. It is a network-specific prefix, like those
	// docs/egress.md says no static list can know.
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"), // discard
	// IETF protocol assignments, the twin of 192.0.0.0/24: the PCP and
	// TURN anycast addresses (2001:1::1, 2001:1::2) reach the local
	// network's gateway; benchmarking, ORCHID and the rest are not for a
	// fetch. Teredo's 2001::/32 inside it is judged by its embedding first.
	netip.MustParsePrefix("2001::/23"),
	netip.MustParsePrefix("2001:db8::/32"), // documentation
	netip.MustParsePrefix("3fff::/20"),     // documentation (RFC 9637)
	// The returned 6bone block; 3ffe:831f::/32 was Teredo's prefix before
	// RFC 4380 gave it 2001::/32, and old clients still use it.
	netip.MustParsePrefix("3ffe::/16"),
	netip.MustParsePrefix("5f00::/16"), // SRv6 segment identifiers (RFC 9602)
	netip.MustParsePrefix("fec0::/10"), // site-local (deprecated, still routed by some)
}

// embedding is an IPv6 block whose addresses carry IPv4 addresses that a
// packet to them reaches, through a translator, a tunnel or the host's own
// stack. Such an address is allowed exactly when every IPv4 address it
// carries is.
type embedding struct {
	prefix netip.Prefix
	v4     func(b [16]byte) []netip.Addr
}

var embeddings = []embedding{
	{netip.MustParsePrefix("::ffff:0:0/96"), last32},   // IPv4-mapped (RFC 4291 §2.5.5.2)
	{netip.MustParsePrefix("::/96"), last32},           // IPv4-compatible, deprecated (RFC 4291 §2.5.5.1); :: and ::1 too
	{netip.MustParsePrefix("::ffff:0:0:0/96"), last32}, // IPv4-translated, SIIT (RFC 2765 §2.1)
	{netip.MustParsePrefix("64:ff9b::/96"), last32},    // NAT64 well-known prefix (RFC 6052 §2.1)
	{netip.MustParsePrefix("2002::/16"), sixToFour},    // 6to4 (RFC 3056 §2)
	{netip.MustParsePrefix("2001::/32"), teredo},       // Teredo (RFC 4380 §4)
}

func last32(b [16]byte) []netip.Addr { return []netip.Addr{netip.AddrFrom4([4]byte(b[12:16]))} }

// sixToFour: 2002:V4ADDR::/48, the site's 6to4 router.
func sixToFour(b [16]byte) []netip.Addr { return []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))} }

// teredo: 2001:0:SERVER:flags:port:CLIENT, the client's address and port
// stored inverted. Packets go to the client's address (through a relay);
// the server takes part in reaching it, so both must be allowed.
func teredo(b [16]byte) []netip.Addr {
	client := [4]byte(b[12:16])
	for i := range client {
		client[i] ^= 0xff
	}
	return []netip.Addr{netip.AddrFrom4([4]byte(b[4:8])), netip.AddrFrom4(client)}
}

// isatap reports the IPv4 address in an ISATAP interface identifier
// (RFC 5214 §6.1: [00 or 02]-00-5E-FE then the address), which may follow
// any /64 prefix: a host on that ISATAP link sends the packet to the IPv4
// address. The u/g bits of the first byte are ignored, as Linux does.
func isatap(b [16]byte) (netip.Addr, bool) {
	if b[8]&^0x03 != 0 || b[9] != 0 || b[10] != 0x5e || b[11] != 0xfe {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte(b[12:16])), true
}

// Allowed reports whether the proxy may dial a: a global unicast address
// outside every forbidden block. An IPv6 address that embeds IPv4 addresses
// (IPv4-mapped, -compatible and -translated, the NAT64 well-known prefix,
// 6to4, Teredo, an ISATAP interface identifier) is allowed only if each of
// them is; docs/egress.md says what no static list can know.
func Allowed(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.Is4() {
		return allowed4(a)
	}
	b := a.As16()
	for _, e := range embeddings {
		if e.prefix.Contains(a) {
			for _, v4 := range e.v4(b) {
				if !allowed4(v4) {
					return false
				}
			}
			// An ISATAP identifier may follow any prefix, these too.
			if v4, ok := isatap(b); ok && !allowed4(v4) {
				return false
			}
			return true
		}
	}
	if v4, ok := isatap(b); ok && !allowed4(v4) {
		return false
	}
	return allowedPlain(a)
}

// allowed4 judges an IPv4 address.
func allowed4(a netip.Addr) bool { return allowedPlain(a) }

// allowedPlain judges an address by netip's predicates and the forbidden
// blocks only.
func allowedPlain(a netip.Addr) bool {
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() ||
		a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range forbidden {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
