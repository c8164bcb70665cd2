package posixacl

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomACL is a valid ACL: the three base entries, some named users and
// groups, and a mask when any is named.
func randomACL(r *rand.Rand) ACL {
	u := UndefinedID
	perm := func() uint16 { return uint16(r.IntN(8)) }
	a := ACL{{UserObj, perm(), u}, {GroupObj, perm(), u}, {Other, perm(), u}}
	for range r.IntN(4) {
		a = append(a, Entry{User, perm(), uint32(r.IntN(20))})
	}
	for range r.IntN(3) {
		a = append(a, Entry{Group, perm(), uint32(r.IntN(20))})
	}
	// Drop repeated ids, keeping the first.
	var out ACL
	for _, e := range sorted(a) {
		if n := len(out); n > 0 && out[n-1].Tag == e.Tag && out[n-1].ID == e.ID {
			continue
		}
		out = append(out, e)
	}
	if len(out) > 3 {
		out = sorted(append(out, Entry{Mask, perm(), u}))
	}
	return out
}

// TestProperties, on many random ACLs: decode(encode(a)) == a; AddUsers
// keeps every existing entry with at least its bits, gives each wanted
// user its bits through the mask, takes nothing from anyone (every uid's
// access only grows), and run again changes nothing.
func TestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		a := randomACL(r)
		if err := a.Valid(); err != nil {
			t.Fatalf("generator: %s: %v", a, err)
		}
		d, err := Decode(a.Encode())
		if err != nil || d.String() != a.String() || !bytes.Equal(d.Encode(), a.Encode()) {
			t.Fatalf("%s: decoded as %s, %v", a, d, err)
		}
		// As the caller does: a user keeps what it may do now, since a
		// named entry decides alone (others' bits no longer count).
		// (Has needs the user's own groups: one of the three kinds below.)
		uid := uint32(r.IntN(20))
		ugids := [][]uint32{nil, {uid}, {1 << 20}}[r.IntN(3)]
		wants := []Want{{uid, uint16(r.IntN(8)) | a.Has(uid, ugids, 1<<20, 1<<20)}}
		m, err := a.AddUsers(wants)
		if err != nil {
			continue // a widening refused: nothing to check but that nothing is returned
		}
		for _, e := range a {
			got, ok := m.ACL.Get(e.Tag, e.ID)
			if !ok || (e.Tag != Mask && got.Perm&e.Perm != e.Perm) {
				t.Fatalf("%s + %v = %s: lost or narrowed %v", a, wants, m.ACL, e)
			}
		}
		for _, w := range wants {
			if !m.ACL.Allows(w.UID, nil, 1<<20, 1<<20, w.Perm) {
				t.Fatalf("%s + %v = %s: uid %d lacks %s", a, wants, m.ACL, w.UID, PermText(w.Perm))
			}
		}
		for uid := uint32(0); uid < 20; uid++ {
			for _, gids := range [][]uint32{nil, {uid}, {1 << 20}} {
				if uid == wants[0].UID && !slices.Equal(gids, ugids) {
					continue // another user of the same uid, as far as the groups go
				}
				before, after := a.Has(uid, gids, 1<<20, 1<<20), m.ACL.Has(uid, gids, 1<<20, 1<<20)
				if before&^after != 0 {
					t.Fatalf("%s + %v = %s: uid %d groups %v lost %s", a, wants, m.ACL, uid, gids, PermText(before&^after))
				}
				if gained := after &^ before; gained != 0 && uid != wants[0].UID {
					t.Fatalf("%s + %v = %s: uid %d groups %v gained %s", a, wants, m.ACL, uid, gids, PermText(gained))
				}
			}
		}
		again, err := m.ACL.AddUsers(wants)
		if err != nil || len(again.Changes) != 0 || again.ACL.String() != m.ACL.String() {
			t.Fatalf("%s + %v twice: %v, %v", a, wants, again.Describe(), err)
		}
	}
}

// FuzzDecode: untrusted bytes never panic, and whatever decodes encodes
// back to the same bytes (there is one way to write each ACL).
func FuzzDecode(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0})
	for _, a := range []ACL{FromMode(0o750), {{UserObj, 7, UndefinedID}, {User, 7, 1000}, {GroupObj, 5, UndefinedID}, {Mask, 7, UndefinedID}, {Other, 0, UndefinedID}}} {
		f.Add(a.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(a.Encode(), b) {
			t.Fatalf("%x decodes to %s, which encodes as %x", b, a, a.Encode())
		}
		if _, err := a.AddUsers([]Want{{1, RWX}}); err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}
