// Package posixacl reads, writes and merges POSIX ACLs in the form Linux
// keeps them in the system.posix_acl_access and system.posix_acl_default
// extended attributes. It is what `bxctl grants check --fix` uses to give
// the tools' uid a granted folder without setfacl, which Debian's minimal
// systems do not install (docs/decisions.md, "Writable grants without
// hand-made ACLs"). It does no I/O: the caller reads and writes the
// attribute through a descriptor it has checked.
package posixacl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The attributes' names.
const (
	Access  = "system.posix_acl_access"
	Default = "system.posix_acl_default"
)

// Tags, as the kernel numbers them (include/uapi/linux/posix_acl.h). Their
// numeric order is the order the kernel requires entries in.
const (
	UserObj  uint16 = 0x01
	User     uint16 = 0x02
	GroupObj uint16 = 0x04
	Group    uint16 = 0x08
	Mask     uint16 = 0x10
	Other    uint16 = 0x20
)

// Permission bits of an entry.
const (
	Read    uint16 = 4
	Write   uint16 = 2
	Execute uint16 = 1
	RWX            = Read | Write | Execute
)

// UndefinedID is the id the kernel writes for entries that name no one
// (the owner, the owning group, the mask, others).
const UndefinedID uint32 = 0xFFFFFFFF

// version is the only version of the attribute format Linux has.
const version = 2

// Entry is one entry: a tag, its permissions, and for User and Group the
// uid or gid (UndefinedID for the others).
type Entry struct {
	Tag  uint16
	Perm uint16
	ID   uint32
}

// ACL is a valid ACL, entries in the kernel's order: by tag, then by id.
type ACL []Entry

// Decode reads an attribute's bytes. The bytes come from a file system and
// are treated as untrusted: anything the kernel would not itself write (an
// unknown version or tag, a permission bit above rwx, entries out of order
// or repeated, a missing required entry, an id on an entry that names no
// one) is an error, never a guess.
func Decode(b []byte) (ACL, error) {
	if len(b) < 4 || (len(b)-4)%8 != 0 {
		return nil, fmt.Errorf("posix ACL: %d bytes is not a header and whole entries", len(b))
	}
	if v := binary.LittleEndian.Uint32(b); v != version {
		return nil, fmt.Errorf("posix ACL: version %d, want %d", v, version)
	}
	a := make(ACL, 0, (len(b)-4)/8)
	for i := 4; i < len(b); i += 8 {
		a = append(a, Entry{binary.LittleEndian.Uint16(b[i:]), binary.LittleEndian.Uint16(b[i+2:]), binary.LittleEndian.Uint32(b[i+4:])})
	}
	if err := a.Valid(); err != nil {
		return nil, err
	}
	return a, nil
}

// Encode is the attribute's bytes. a must be valid (Valid); an invalid
// one panics, because writing it would be a bug here, not bad input.
func (a ACL) Encode() []byte {
	if err := a.Valid(); err != nil {
		panic(err)
	}
	b := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+8*len(a)), version)
	for _, e := range a {
		b = binary.LittleEndian.AppendUint16(b, e.Tag)
		b = binary.LittleEndian.AppendUint16(b, e.Perm)
		b = binary.LittleEndian.AppendUint32(b, e.ID)
	}
	return b
}

// Valid says why a is not an ACL the kernel would accept and write back
// the same: the rules of posix_acl_valid, and the canonical form (sorted,
// UndefinedID on unnamed entries) that makes Encode(Decode(b)) == b.
func (a ACL) Valid() error {
	seen := map[uint16]int{}
	named := false
	for i, e := range a {
		if e.Perm&^RWX != 0 {
			return fmt.Errorf("posix ACL: entry %d has permission bits %#o beyond rwx", i, e.Perm)
		}
		switch e.Tag {
		case User, Group:
			named = true
			if e.ID == UndefinedID {
				return fmt.Errorf("posix ACL: entry %d names the undefined id", i)
			}
		case UserObj, GroupObj, Mask, Other:
			if e.ID != UndefinedID {
				return fmt.Errorf("posix ACL: entry %d (tag %#x) names id %d; it names no one", i, e.Tag, e.ID)
			}
		default:
			return fmt.Errorf("posix ACL: entry %d has unknown tag %#x", i, e.Tag)
		}
		if i > 0 {
			p := a[i-1]
			if e.Tag < p.Tag || e.Tag == p.Tag && (e.Tag != User && e.Tag != Group || e.ID <= p.ID) {
				return fmt.Errorf("posix ACL: entry %d is out of order or repeated", i)
			}
		}
		seen[e.Tag]++
	}
	for _, t := range []uint16{UserObj, GroupObj, Other} {
		if seen[t] != 1 {
			return fmt.Errorf("posix ACL: %d entries of tag %#x, want 1", seen[t], t)
		}
	}
	if named && seen[Mask] != 1 {
		return errors.New("posix ACL: named entries without a mask")
	}
	return nil
}

// FromMode is the minimal ACL that mode's permission bits stand for: what
// a file without an access ACL has, and what setfacl starts from.
func FromMode(mode uint32) ACL {
	return ACL{
		{UserObj, uint16(mode>>6) & RWX, UndefinedID},
		{GroupObj, uint16(mode>>3) & RWX, UndefinedID},
		{Other, uint16(mode) & RWX, UndefinedID},
	}
}

// Get is the entry of tag (and id, for User and Group), if a has one.
func (a ACL) Get(tag uint16, id uint32) (Entry, bool) {
	for _, e := range a {
		if e.Tag == tag && (tag != User && tag != Group || e.ID == id) {
			return e, true
		}
	}
	return Entry{}, false
}

// PermText is perm as getfacl writes it: "rwx", "r-x", "--x".
func PermText(perm uint16) string {
	b := []byte("---")
	for i, c := range "rwx" {
		if perm&(4>>i) != 0 {
			b[i] = byte(c)
		}
	}
	return string(b)
}

// String is the ACL in getfacl's short form, numeric ids:
// "u::rwx,u:1000:r-x,g::r-x,m::r-x,o::---".
func (a ACL) String() string {
	var parts []string
	for _, e := range a {
		id := ""
		if e.Tag == User || e.Tag == Group {
			id = strconv.FormatUint(uint64(e.ID), 10)
		}
		parts = append(parts, tagText[e.Tag]+":"+id+":"+PermText(e.Perm))
	}
	return strings.Join(parts, ",")
}

var tagText = map[uint16]string{UserObj: "u", User: "u", GroupObj: "g", Group: "g", Mask: "m", Other: "o"}

// sorted returns a in the kernel's order.
func sorted(a ACL) ACL {
	a = slices.Clone(a)
	slices.SortFunc(a, func(x, y Entry) int {
		if x.Tag != y.Tag {
			return int(x.Tag) - int(y.Tag)
		}
		switch {
		case x.ID < y.ID:
			return -1
		case x.ID > y.ID:
			return 1
		}
		return 0
	})
	return a
}
