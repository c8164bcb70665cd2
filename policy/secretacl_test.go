package policy_test

import (
	"cmp"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"boxmaker/policy"
)

// aclEntry is one POSIX ACL entry: tag, permissions, id.
type aclEntry struct {
	tag, perm uint16
	id        uint32
}

const noID = 0xffffffff

// acl encodes entries as Linux stores system.posix_acl_access, in the
// order the kernel requires: by tag, then by id.
func acl(entries ...aclEntry) []byte {
	slices.SortFunc(entries, func(a, b aclEntry) int { return cmp.Or(cmp.Compare(a.tag, b.tag), cmp.Compare(a.id, b.id)) })
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// credACL is what systemd gives a credential on tmpfs: the owner (root)
// reads, the service's user reads, nobody else.
func credACL(uid uint32, perm uint16, extra ...aclEntry) []byte {
	es := []aclEntry{{0x01, perm, noID}, {0x02, perm, uid}, {0x04, 0, noID}}
	es = append(es, extra...)
	return acl(append(es, aclEntry{0x10, perm, noID}, aclEntry{0x20, 0, noID})...)
}

// TestSecretsFromSystemdCredentials: a directory and file laid out as
// systemd lays out $CREDENTIALS_DIRECTORY on a file system with ACLs (owned
// by root, mode 0550 and 0440, the service's user named in the ACL) are
// accepted for that user and refused for any other, or when the ACL lets
// anyone else in. Only root can make root's files, and the gate's machines
// test as root; the user is pretended.
func TestSecretsFromSystemdCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test makes root's files with ACLs: run it as root (the gate does)")
	}
	const brokerd = 990
	root := t.TempDir()
	layout := func(name string, dirACL, fileACL []byte, fileMode os.FileMode) string {
		d := filepath.Join(root, name)
		f := filepath.Join(d, "api-key")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(marker), 0o400); err != nil {
			t.Fatal(err)
		}
		for _, x := range []struct {
			path string
			acl  []byte
		}{{d, dirACL}, {f, fileACL}} {
			if x.acl != nil {
				if err := unix.Setxattr(x.path, "system.posix_acl_access", x.acl, 0); err != nil {
					t.Fatalf("setting an ACL: %v", err)
				}
			}
		}
		if err := os.Chmod(f, fileMode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	good := layout("good", credACL(brokerd, 5), credACL(brokerd, 4), 0o440)
	if fi, err := os.Stat(filepath.Join(good, "api-key")); err != nil || fi.Mode().Perm() != 0o440 {
		t.Fatalf("the file's mode shows the mask: %v %v", fi.Mode(), err)
	}
	otherUser := layout("other-user", credACL(brokerd, 5), credACL(brokerd, 4, aclEntry{0x02, 4, 1234}), 0o440)
	group := layout("group", credACL(brokerd, 5), credACL(brokerd, 4, aclEntry{0x08, 4, 100}), 0o440)
	others := layout("others", credACL(brokerd, 5), credACL(brokerd, 4), 0o444)
	noACL := layout("no-acl", credACL(brokerd, 5), nil, 0o400)
	masked := layout("masked", credACL(brokerd, 5), acl(aclEntry{0x01, 4, noID}, aclEntry{0x02, 4, brokerd}, aclEntry{0x02, 4, 1234},
		aclEntry{0x04, 4, noID}, aclEntry{0x10, 0, noID}, aclEntry{0x20, 0, noID}), 0o400)

	policy.PretendEUID(t, brokerd)
	if missing, err := policy.CheckSecretsDir(good); missing || err != nil {
		t.Errorf("systemd's directory: %v", err)
	}
	if v, err := policy.ReadSecret(good, "api-key"); err != nil || string(v) != marker {
		t.Errorf("systemd's file: %v", err)
	}
	// A mask of nothing shuts every named entry out: only the owner, root,
	// reads it, and brokerd runs as root's equal only when it is root.
	if _, err := policy.ReadSecret(masked, "api-key"); err != nil {
		t.Errorf("a mask of nothing: %v", err)
	}
	for _, tc := range []struct{ dir, want string }{
		{otherUser, "is owned by uid 0, not by uid 990"},
		{group, "is owned by uid 0, not by uid 990"},
		{others, "is owned by uid 0, not by uid 990"},
		{noACL, "is owned by uid 0, not by uid 990"},
	} {
		_, err := policy.ReadSecret(tc.dir, "api-key")
		secretErr(t, tc.dir, err, "api-key", policy.RunbookSecretFileUnsafe, tc.want)
	}
	// The same directory, for any other user, is someone else's.
	policy.PretendEUID(t, brokerd+1)
	_, err := policy.CheckSecretsDir(good)
	secretErr(t, "another user", err, "", policy.RunbookSecretsDirUnsafe, "is owned by uid 0, not by uid 991")
}
