package policy

import (
	"encoding/binary"
	"testing"
)

// acl builds a system.posix_acl_access value from (tag, perm, id) triples.
func acl(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// TestACLOnlyFor is the table of ACLs a root-owned secret may carry: one
// that names brokerd's user (1001 here) and lets nobody else in is
// accepted; every other shape is not.
func TestACLOnlyFor(t *testing.T) {
	const me, other = 1001, 1002
	owner, group, mask, others := [3]uint32{aclUserObj, 4, 0}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, 4, 0}, [3]uint32{aclOther, 0, 0}
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"systemd's: brokerd's user may read", acl(owner, [3]uint32{aclUser, 4, me}, group, mask, others), true},
		{"the group read bit masked off", acl(owner, [3]uint32{aclUser, 4, me}, [3]uint32{aclGroupObj, 4, 0}, [3]uint32{aclMask, 0, 0}, others), true},
		{"another user may read", acl(owner, [3]uint32{aclUser, 4, me}, [3]uint32{aclUser, 4, other}, group, mask, others), false},
		{"another user, masked off", acl(owner, [3]uint32{aclUser, 4, me}, [3]uint32{aclUser, 4, other}, group, [3]uint32{aclMask, 0, 0}, others), true},
		{"the owning group may read", acl(owner, [3]uint32{aclUser, 4, me}, [3]uint32{aclGroupObj, 4, 0}, mask, others), false},
		{"a named group may read", acl(owner, [3]uint32{aclUser, 4, me}, group, [3]uint32{aclGroup, 4, 50}, mask, others), false},
		{"others may read", acl(owner, [3]uint32{aclUser, 4, me}, group, mask, [3]uint32{aclOther, 4, 0}), false},
		{"others may only search", acl(owner, [3]uint32{aclUser, 4, me}, group, mask, [3]uint32{aclOther, 1, 0}), false},
		{"names only another user", acl(owner, [3]uint32{aclUser, 0, other}, group, mask, others), false},
		{"no mask", acl(owner, [3]uint32{aclUser, 4, me}, group, others), false},
		{"two masks, the first open", acl(owner, [3]uint32{aclUser, 4, me}, [3]uint32{aclGroupObj, 4, 0}, [3]uint32{aclMask, 7, 0}, [3]uint32{aclMask, 0, 0}, others), false},
		{"an unknown tag", acl(owner, [3]uint32{aclUser, 4, me}, group, mask, others, [3]uint32{0x40, 0, 0}), false},
		{"version 1", append([]byte{1, 0, 0, 0}, acl(owner, [3]uint32{aclUser, 4, me}, group, mask, others)[4:]...), false},
		{"a torn entry", acl(owner, [3]uint32{aclUser, 4, me}, group, mask, others)[:27], false},
		{"empty", nil, false},
		{"only the version", acl(), false},
	} {
		if got := aclOnlyFor(tc.b, me); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzACLOnlyFor: any bytes, no panic; and whatever is accepted lets no
// one but uid, the owner and root in, by a plain reading of the entries.
func FuzzACLOnlyFor(f *testing.F) {
	f.Add(acl([3]uint32{aclUserObj, 6, 0}, [3]uint32{aclUser, 4, 1001}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, 4, 0}, [3]uint32{aclOther, 0, 0}), uint32(1001))
	f.Add([]byte{2, 0, 0, 0}, uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, uid uint32) {
		if !aclOnlyFor(b, uid) {
			return
		}
		mask, masks := uint16(0), 0
		for i := 4; i+8 <= len(b); i += 8 {
			if binary.LittleEndian.Uint16(b[i:]) == aclMask {
				mask, masks = binary.LittleEndian.Uint16(b[i+2:])&7, masks+1
			}
		}
		if masks != 1 {
			t.Fatalf("accepted with %d mask entries: %x", masks, b)
		}
		for i := 4; i+8 <= len(b); i += 8 {
			tag, perm, id := binary.LittleEndian.Uint16(b[i:]), binary.LittleEndian.Uint16(b[i+2:]), binary.LittleEndian.Uint32(b[i+4:])
			switch {
			case tag == aclUser && id != uid && perm&mask != 0,
				(tag == aclGroupObj || tag == aclGroup) && perm&mask != 0,
				tag == aclOther && perm&7 != 0:
				t.Fatalf("accepted an ACL that lets someone else in (entry %d): %x", (i-4)/8, b)
			}
		}
	})
}
