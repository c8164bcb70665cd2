package posixacl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Want is a named user and the permissions it must have.
type Want struct {
	UID  uint32
	Perm uint16
}

// Change is what AddUsers did to one named user's entry.
type Change struct {
	UID      uint32
	Had      bool   // the entry was there before
	Old, New uint16 // its permissions before (when Had) and after
}

// Merged is AddUsers' result.
type Merged struct {
	ACL     ACL
	Changes []Change // in the order of the wants; empty: nothing to do
	// The mask before (HadMask: there was one) and after, when it changed.
	HadMask          bool
	OldMask, NewMask uint16
	MaskChanged      bool
}

// AddUsers returns a with each wanted user given at least its
// permissions, effective through the mask. A named entry decides alone
// for its user (others' and groups' bits no longer count), so a Want's
// Perm must hold what the user may do now (Has) as well as what it needs;
// a Want of no bits is nothing to do. Every existing entry is kept
// and no permission is taken away: a user's entry only gains bits. When
// something changes, the mask is recomputed as the union of the group
// class (named users, the owning group, named groups), as setfacl does.
//
// A wider mask would also widen what other entries of the group class
// have had masked off; that would give someone access nobody asked for,
// so AddUsers refuses it (an error naming the entry) and the caller
// changes nothing.
func (a ACL) AddUsers(wants []Want) (Merged, error) {
	if err := a.Valid(); err != nil {
		return Merged{}, err
	}
	oldMask, hasMask := RWX, false
	if m, ok := a.Get(Mask, UndefinedID); ok {
		oldMask, hasMask = m.Perm, true
	}
	out := slices.Clone(a)
	var changes []Change
	for _, w := range wants {
		if w.Perm&^RWX != 0 || w.UID == UndefinedID {
			return Merged{}, fmt.Errorf("posix ACL: cannot give uid %d permission bits %#o", w.UID, w.Perm)
		}
		i := slices.IndexFunc(out, func(e Entry) bool { return e.Tag == User && e.ID == w.UID })
		switch {
		case w.Perm == 0:
		case i < 0:
			out = append(out, Entry{User, w.Perm, w.UID})
			changes = append(changes, Change{UID: w.UID, New: w.Perm})
		case out[i].Perm&w.Perm != w.Perm:
			changes = append(changes, Change{UID: w.UID, Had: true, Old: out[i].Perm, New: out[i].Perm | w.Perm})
			out[i].Perm |= w.Perm
		case oldMask&w.Perm != w.Perm:
			// The entry has the bits but the mask hides some: only the
			// mask changes, below.
			changes = append(changes, Change{UID: w.UID, Had: true, Old: out[i].Perm, New: out[i].Perm})
		}
	}
	if len(changes) == 0 {
		return Merged{ACL: a, HadMask: hasMask, OldMask: oldMask, NewMask: oldMask}, nil
	}
	var mask uint16
	for _, e := range out {
		if e.Tag == User || e.Tag == GroupObj || e.Tag == Group {
			mask |= e.Perm
		}
	}
	wanted := func(e Entry) bool {
		return e.Tag == User && slices.ContainsFunc(wants, func(w Want) bool { return w.UID == e.ID })
	}
	for _, e := range a {
		if (e.Tag == User || e.Tag == GroupObj || e.Tag == Group) && !wanted(e) {
			if gained := e.Perm & mask &^ oldMask; gained != 0 {
				return Merged{}, fmt.Errorf("the mask would widen from %s to %s and give %s the %s it has masked off now",
					PermText(oldMask), PermText(mask), entryText(e), PermText(gained))
			}
		}
	}
	i := slices.IndexFunc(out, func(e Entry) bool { return e.Tag == Mask })
	if i < 0 {
		out = append(out, Entry{Mask, mask, UndefinedID})
	} else {
		out[i].Perm = mask
	}
	out = sorted(out)
	if err := out.Valid(); err != nil {
		return Merged{}, err // cannot happen: the inputs were valid
	}
	return Merged{ACL: out, Changes: changes, HadMask: hasMask, OldMask: oldMask, NewMask: mask,
		MaskChanged: !hasMask || mask != oldMask}, nil
}

// entryText is one entry in getfacl's short form.
func entryText(e Entry) string { return ACL{e}.String() }

// Describe is m's changes as one clause: "added u:231069:rwx, u:998:r-x ->
// r-x; mask now rwx (was r-x)". "" when nothing changed.
func (m Merged) Describe() string {
	if len(m.Changes) == 0 {
		return ""
	}
	var parts []string
	for _, c := range m.Changes {
		u := "u:" + strconv.FormatUint(uint64(c.UID), 10) + ":"
		switch {
		case !c.Had:
			parts = append(parts, "added "+u+PermText(c.New))
		case c.Old != c.New:
			parts = append(parts, u+PermText(c.Old)+" -> "+PermText(c.New))
		default:
			parts = append(parts, u+PermText(c.New)+" unmasked")
		}
	}
	s := strings.Join(parts, ", ")
	switch {
	case !m.MaskChanged:
	case m.HadMask:
		s += "; mask " + PermText(m.OldMask) + " -> " + PermText(m.NewMask)
	default:
		s += "; mask " + PermText(m.NewMask)
	}
	return s
}

// Allows reports whether a process of uid, whose groups are gids, may
// have every bit of want on a file of owner and group carrying a as its
// access ACL: the kernel's check (posix_acl_permission), for a process
// without capabilities. A named user entry or any matching group entry
// decides alone: others' bits count only for a process matched by
// neither, so a user in the owning group may have less than others have.
func (a ACL) Allows(uid uint32, gids []uint32, owner, group uint32, want uint16) bool {
	mask := RWX
	if m, ok := a.Get(Mask, UndefinedID); ok {
		mask = m.Perm
	}
	if uid == owner {
		e, _ := a.Get(UserObj, UndefinedID)
		return e.Perm&want == want
	}
	if e, ok := a.Get(User, uid); ok {
		return e.Perm&mask&want == want
	}
	matched := false
	for _, e := range a {
		in := e.Tag == GroupObj && slices.Contains(gids, group) || e.Tag == Group && slices.Contains(gids, e.ID)
		if !in {
			continue
		}
		matched = true
		if e.Perm&want == want {
			return mask&want == want
		}
	}
	if matched {
		return false
	}
	e, _ := a.Get(Other, UndefinedID)
	return e.Perm&want == want
}

// Has is the bits of RWX that Allows grants one by one: what the process
// may do now, which a named entry given to it must keep.
func (a ACL) Has(uid uint32, gids []uint32, owner, group uint32) uint16 {
	var p uint16
	for _, bit := range []uint16{Read, Write, Execute} {
		if a.Allows(uid, gids, owner, group, bit) {
			p |= bit
		}
	}
	return p
}

// DefaultFrom is the default ACL a directory without one starts from,
// given its access ACL: its owner's, owning group's and others' entries,
// as setfacl copies them, but without write for the group and others. A
// default ACL replaces the umask for what is created below it, so copied
// as is, a 0777 folder would make every later file writable by everyone;
// dropping write is what Debian's umask 022 would have done.
func DefaultFrom(access ACL) ACL {
	u, _ := access.Get(UserObj, UndefinedID)
	g, _ := access.Get(GroupObj, UndefinedID)
	o, _ := access.Get(Other, UndefinedID)
	return ACL{u, {GroupObj, g.Perm &^ Write, UndefinedID}, {Other, o.Perm &^ Write, UndefinedID}}
}
