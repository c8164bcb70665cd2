package posixacl

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// fixture is one line of testdata/setfacl.txt: what setfacl 2.3.1 wrote
// on a directory of the mode, after an optional first setfacl -m, for
// setfacl -m (and -d -m) of named users. The bytes were read once with
// getxattr and are kept here, so the test needs no setfacl.
type fixture struct {
	name                        string
	mode                        uint32
	spec, dspec                 []Want
	before, after, defaultAfter []byte // nil: no attribute
}

func wantsOf(t *testing.T, spec string) []Want {
	t.Helper()
	if spec == "-" {
		return nil
	}
	var ws []Want
	for _, s := range strings.Split(spec, ",") {
		f := strings.Split(s, ":")
		uid, err := strconv.ParseUint(f[1], 10, 32)
		if len(f) != 3 || f[0] != "u" || err != nil {
			t.Fatalf("spec %q", spec)
		}
		var p uint16
		for _, c := range f[2] {
			p |= map[rune]uint16{'r': Read, 'w': Write, 'x': Execute}[c]
		}
		ws = append(ws, Want{uint32(uid), p})
	}
	return ws
}

func hexOf(t *testing.T, s string) []byte {
	t.Helper()
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	f, err := os.Open("testdata/setfacl.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fixture
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		c := strings.Fields(l)
		if len(c) != 8 {
			t.Fatalf("fixture line %q", l)
		}
		mode, _ := strconv.ParseUint(c[1], 8, 32)
		out = append(out, fixture{c[0], uint32(mode), wantsOf(t, c[3]), wantsOf(t, c[4]), hexOf(t, c[5]), hexOf(t, c[6]), hexOf(t, c[7])})
	}
	if len(out) < 8 {
		t.Fatalf("%d fixtures", len(out))
	}
	return out
}

// TestSetfaclBytes: starting from what the directory had (its mode, or
// the ACL a first setfacl wrote), AddUsers gives the very bytes setfacl
// wrote, for the access ACL and for a default ACL made where there was
// none; and every attribute decodes and encodes back to itself.
func TestSetfaclBytes(t *testing.T) {
	for _, fx := range fixtures(t) {
		start := FromMode(fx.mode)
		if fx.before != nil {
			a, err := Decode(fx.before)
			if err != nil {
				t.Fatalf("%s: before: %v", fx.name, err)
			}
			start = a
		}
		m, err := start.AddUsers(fx.spec)
		if err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		if got := m.ACL.Encode(); !bytes.Equal(got, fx.after) {
			t.Errorf("%s: access\n got %x (%s)\nwant %x", fx.name, got, m.ACL, fx.after)
		}
		if fx.dspec != nil {
			d, err := DefaultFrom(m.ACL).AddUsers(fx.dspec)
			if err != nil {
				t.Fatalf("%s: default: %v", fx.name, err)
			}
			if got := d.ACL.Encode(); !bytes.Equal(got, fx.defaultAfter) {
				t.Errorf("%s: default\n got %x (%s)\nwant %x", fx.name, got, d.ACL, fx.defaultAfter)
			}
		}
		for _, b := range [][]byte{fx.before, fx.after, fx.defaultAfter} {
			if b == nil {
				continue
			}
			a, err := Decode(b)
			if err != nil {
				t.Errorf("%s: %x: %v", fx.name, b, err)
			} else if !bytes.Equal(a.Encode(), b) {
				t.Errorf("%s: %x encodes back as %x", fx.name, b, a.Encode())
			}
		}
	}
}

// TestDescribe is the clause the --fix lines carry, for each kind of
// change, and "" for none.
func TestDescribe(t *testing.T) {
	fresh, _ := FromMode(0o700).AddUsers([]Want{{231069, RWX}})
	ext, _ := ACL{{UserObj, 7, UndefinedID}, {User, 4, 1000}, {GroupObj, 1, UndefinedID}, {Mask, 5, UndefinedID}, {Other, 1, UndefinedID}}.
		AddUsers([]Want{{1000, Read | Write}})
	hidden, _ := ACL{{UserObj, 7, UndefinedID}, {User, 7, 1000}, {GroupObj, 0, UndefinedID}, {Mask, 5, UndefinedID}, {Other, 0, UndefinedID}}.
		AddUsers([]Want{{1000, RWX}})
	none, _ := fresh.ACL.AddUsers([]Want{{231069, Read}})
	for _, tc := range []struct{ got, want string }{
		{fresh.Describe(), "added u:231069:rwx; mask rwx"},
		{ext.Describe(), "u:1000:r-- -> rw-; mask r-x -> rwx"},
		{hidden.Describe(), "u:1000:rwx unmasked; mask r-x -> rwx"},
		{none.Describe(), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

// TestAddUsersRefusesWidening: a recomputed mask that would hand another
// entry bits it has masked off now is refused, not written.
func TestAddUsersRefusesWidening(t *testing.T) {
	u := UndefinedID
	for _, tc := range []struct {
		name string
		a    ACL
		add  Want
		in   string
	}{
		{"the owning group", ACL{{UserObj, 7, u}, {GroupObj, 7, u}, {Mask, 5, u}, {Other, 0, u}}, Want{9, RWX}, "g::rwx the -w-"},
		{"another user", ACL{{UserObj, 7, u}, {User, 7, 5000}, {GroupObj, 0, u}, {Mask, 1, u}, {Other, 0, u}}, Want{9, Read | Execute}, "u:5000:rwx the rw-"},
		{"a named group", ACL{{UserObj, 7, u}, {GroupObj, 0, u}, {Group, 6, 50}, {Mask, 0, u}, {Other, 0, u}}, Want{9, Read}, "g:50:rw- the rw-"},
	} {
		m, err := tc.a.AddUsers([]Want{tc.add})
		if err == nil || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("%s: %v, %v; want an error naming %q", tc.name, m.ACL, err, tc.in)
		}
	}
	// Widening that reaches only the wanted user is fine.
	a := ACL{{UserObj, 7, u}, {User, 1, 9}, {GroupObj, 1, u}, {Mask, 1, u}, {Other, 0, u}}
	if m, err := a.AddUsers([]Want{{9, RWX}}); err != nil || m.ACL.String() != "u::rwx,u:9:rwx,g::--x,m::rwx,o::---" {
		t.Errorf("%v, %v", m.ACL, err)
	}
}

// TestDecodeRefuses: every shape the kernel would not write is an error.
func TestDecodeRefuses(t *testing.T) {
	good := FromMode(0o750)
	good, _ = func() (ACL, error) { m, err := good.AddUsers([]Want{{1000, RWX}}); return m.ACL, err }()
	b := good.Encode()
	set := func(i int, v ...byte) []byte { c := bytes.Clone(b); copy(c[i:], v); return c }
	u := UndefinedID
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"only a header", b[:4]},
		{"a torn entry", b[:len(b)-3]},
		{"version 1", set(0, 1)},
		{"an unknown tag", set(4, 0x40)},
		{"a setuid bit", set(6, 0o10)},
		{"out of order", ACLBytes(ACL{{GroupObj, 5, u}, {UserObj, 7, u}, {Mask, 7, u}, {Other, 0, u}})},
		{"two owners", ACLBytes(ACL{{UserObj, 7, u}, {UserObj, 7, u}, {GroupObj, 5, u}, {Other, 0, u}})},
		{"a repeated user", ACLBytes(ACL{{UserObj, 7, u}, {User, 7, 9}, {User, 5, 9}, {GroupObj, 5, u}, {Mask, 7, u}, {Other, 0, u}})},
		{"users out of order", ACLBytes(ACL{{UserObj, 7, u}, {User, 7, 9}, {User, 5, 8}, {GroupObj, 5, u}, {Mask, 7, u}, {Other, 0, u}})},
		{"no mask", ACLBytes(ACL{{UserObj, 7, u}, {User, 7, 9}, {GroupObj, 5, u}, {Other, 0, u}})},
		{"no other", ACLBytes(ACL{{UserObj, 7, u}, {GroupObj, 5, u}})},
		{"an id on the owner", ACLBytes(ACL{{UserObj, 7, 0}, {GroupObj, 5, u}, {Other, 0, u}})},
		{"a user named undefined", ACLBytes(ACL{{UserObj, 7, u}, {User, 7, u}, {GroupObj, 5, u}, {Mask, 7, u}, {Other, 0, u}})},
	} {
		if a, err := Decode(tc.b); err == nil {
			t.Errorf("%s: %x decoded as %s", tc.name, tc.b, a)
		}
	}
	if _, err := Decode(b); err != nil {
		t.Fatalf("the good one: %v", err)
	}
}

// TestAllows is the kernel's order: owner, named user, groups (which
// decide alone when one matches), others.
func TestAllows(t *testing.T) {
	u := UndefinedID
	a := ACL{{UserObj, 7, u}, {User, 7, 9}, {GroupObj, 0, u}, {Group, 4, 50}, {Mask, 5, u}, {Other, 5, u}}
	const owner, group = 1000, 1000
	for _, tc := range []struct {
		uid  uint32
		gids []uint32
		want uint16
		ok   bool
	}{
		{1000, nil, RWX, true},
		{9, nil, Read | Execute, true},
		{9, nil, Write, false}, // masked off
		{7, []uint32{1000}, Execute, false},
		{7, []uint32{1000}, Read, false}, // the owning group matches and gives nothing; others' r-x does not count
		{7, []uint32{50}, Read, true},
		{7, []uint32{50}, Execute, false},
		{7, []uint32{60}, Read | Execute, true},
	} {
		if got := a.Allows(tc.uid, tc.gids, owner, group, tc.want); got != tc.ok {
			t.Errorf("uid %d groups %v %s: %v", tc.uid, tc.gids, PermText(tc.want), got)
		}
	}
	if got := a.Has(7, []uint32{50}, owner, group); got != Read {
		t.Errorf("Has: %s", PermText(got))
	}
}

// ACLBytes encodes a without the validity check, for the refusal table.
func ACLBytes(a ACL) []byte {
	b := []byte{2, 0, 0, 0}
	for _, e := range a {
		b = append(b, byte(e.Tag), byte(e.Tag>>8), byte(e.Perm), byte(e.Perm>>8), byte(e.ID), byte(e.ID>>8), byte(e.ID>>16), byte(e.ID>>24))
	}
	return b
}
