package policy

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// systemd's credentials directory ($CREDENTIALS_DIRECTORY, LoadCredential=)
// is the one place secrets are not owned by brokerd's user: where the file
// system takes POSIX ACLs (tmpfs, on recent systemd), the directory and
// its files stay root's, read-only, and an ACL entry lets the service's
// user read them; the mode's group bits then show the ACL's mask (0440).
// So besides "owned by the effective user, no access for group or others",
// the secrets rules accept "owned by root, no access for others, and an
// access ACL that names no user but the effective one and gives no group
// anything": nobody but root and brokerd can read it. On ramfs (older
// systemd) systemd gives the files to the user instead, and the first rule
// holds.

// POSIX ACL tags, as Linux stores them in system.posix_acl_access.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
	aclVersion  = 2
)

// onlyUserACL reports whether fd carries an access ACL under which no user
// but uid (and the file's owner) and no group can read, write or search
// it. A file without an ACL, or one that cannot be read, does not qualify.
func onlyUserACL(fd int, uid uint32) bool {
	buf := make([]byte, 1024)
	n, err := retry(func() (int, error) { return unix.Fgetxattr(fd, "system.posix_acl_access", buf) })
	if err != nil {
		return false
	}
	return aclOnlyFor(buf[:n], uid)
}

// aclOnlyFor is onlyUserACL on the attribute's bytes: a version, then
// entries of tag (2 bytes), permissions (2) and id (4), little-endian.
func aclOnlyFor(b []byte, uid uint32) bool {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != aclVersion {
		return false
	}
	mask, hasMask := uint16(7), false
	type entry struct {
		tag, perm uint16
		id        uint32
	}
	var entries []entry
	for i := 4; i < len(b); i += 8 {
		e := entry{binary.LittleEndian.Uint16(b[i:]), binary.LittleEndian.Uint16(b[i+2:]), binary.LittleEndian.Uint32(b[i+4:])}
		if e.tag == aclMask {
			if hasMask {
				return false // the kernel keeps one; two is not an ACL it wrote
			}
			mask, hasMask = e.perm&7, true
		}
		entries = append(entries, e)
	}
	named := false
	for _, e := range entries {
		switch e.tag {
		case aclUserObj, aclMask:
		case aclUser:
			if e.id != uid && e.perm&mask != 0 {
				return false
			}
			named = named || e.id == uid
		case aclGroupObj, aclGroup:
			if e.perm&mask != 0 {
				return false
			}
		case aclOther:
			if e.perm&7 != 0 {
				return false
			}
		default:
			return false // a tag this reading does not know
		}
	}
	// An ACL always has a mask once it names a user; without one, the
	// entries above are the plain mode bits, which the other rule judges.
	return hasMask && named
}
