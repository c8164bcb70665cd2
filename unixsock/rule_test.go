package unixsock

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

// peersFile is how a role's config holds its rules: a [peers] table of
// optional inline tables, decoded by the roles' strict decoder.
type peersFile struct {
	Peers struct {
		A *Rule `toml:"a"`
		B *Rule `toml:"b"`
	} `toml:"peers"`
}

// TestRuleDecoding: what a [peers] entry may be. Decoding errors come from
// wire.DecodeConfig (with the line); the rest from Resolve.
func TestRuleDecoding(t *testing.T) {
	cases := []struct {
		name      string
		toml      string
		decodeErr string // from DecodeConfig, "" when it decodes
		resolved  string // a's String after Resolve, when it resolves
		ruleErr   string // from Resolve
	}{
		{"user", "[peers]\na = { user = \"root\" }\n", "", "user root (uid 0)", ""},
		{"group", "[peers]\na = { group = \"nogroup\" }\n", "", "group nogroup (gid 65534)", ""},
		{"table header", "[peers.a]\nuser = \"nobody\"\n", "", "user nobody (uid 65534)", ""},
		{"dotted key", "[peers]\na.group = \"root\"\n", "", "group root (gid 0)", ""},
		{"both", "[peers]\na = { user = \"root\", group = \"root\" }\n", "", "", `give one of user = "name" or group = "name", not both`},
		{"neither", "[peers]\na = {}\n", "", "", `give one of user = "name" or group = "name"`},
		{"empty name", "[peers]\na = { user = \"\" }\n", "", "", `give one of user = "name" or group = "name"`},
		{"unknown user", "[peers]\na = { user = \"bx-no-such-user\" }\n", "", "", `there is no user "bx-no-such-user" on this system`},
		{"unknown group", "[peers]\na = { group = \"bx-no-such-group\" }\n", "", "", `there is no group "bx-no-such-group" on this system`},
		{"a uid is not a name", "[peers]\na = { user = \"0\" }\n", "", "", `there is no user "0" on this system`},
		{"unknown key", "[peers]\nb = { user = \"root\" }\na = { uid = 0 }\n", `peers.toml:3: unknown key "peers.a.uid"`, "", ""},
		{"key in the wrong case", "[peers]\na = { User = \"root\" }\n", `peers.toml:2: unknown key "peers.a.User"`, "", ""},
		{"a string, not a table", "[peers]\na = \"root\"\n", `peers.toml:2: "peers.a" must be a table`, "", ""},
		{"a number for the name", "[peers]\na = { user = 0 }\n", `peers.toml:2: "peers.a.user" must be a string`, "", ""},
		{"an array of tables", "[[peers.a]]\nuser = \"root\"\n", `peers.toml:1: "peers.a" must be a table, not an array of tables`, "", ""},
		{"unknown socket", "[peers]\nc = { user = \"root\" }\n", `peers.toml:2: unknown key "peers.c"`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f peersFile
			err := wire.DecodeConfig("peers.toml", []byte(c.toml), &f)
			if c.decodeErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.decodeErr) {
					t.Fatalf("decoding: %v, want %q", err, c.decodeErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if f.Peers.A == nil {
				t.Fatal("peers.a is not set")
			}
			err = f.Peers.A.Resolve()
			if c.ruleErr != "" {
				if err == nil || err.Error() != c.ruleErr {
					t.Fatalf("Resolve: %v, want %q", err, c.ruleErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got := f.Peers.A.String(); got != c.resolved {
				t.Fatalf("rule %q, want %q", got, c.resolved)
			}
		})
	}
}

// TestAbsentRuleIsNil: a socket the file names no rule for has none.
func TestAbsentRuleIsNil(t *testing.T) {
	var f peersFile
	if err := wire.DecodeConfig("peers.toml", []byte("[peers]\na = { user = \"root\" }\n"), &f); err != nil {
		t.Fatal(err)
	}
	if f.Peers.B != nil {
		t.Fatalf("peers.b = %+v, want nil", f.Peers.B)
	}
}

// TestUnresolvedRuleAllowsNobody: a rule not resolved lets no one through
// (Listen resolves the rules it is given).
func TestUnresolvedRuleAllowsNobody(t *testing.T) {
	r := &Rule{User: "root"}
	if r.Allows(0, 0) {
		t.Fatal("an unresolved rule allowed root")
	}
	if r.String() != "user root" {
		t.Fatalf("String %q", r.String())
	}
}

// TestAllowsAgreesWithTheFiles is a property test against a naive oracle
// that reads /etc/passwd and /etc/group itself: for every group of the
// system and uids and gids drawn from the system's and at random, a group
// rule allows a peer exactly when the peer's gid is the group, or the
// uid's passwd entry has it as primary group, or the uid's name is listed
// as a member. A user rule allows exactly its uid, whatever the gid.
func TestAllowsAgreesWithTheFiles(t *testing.T) {
	passwd := readColon(t, "/etc/passwd") // name:x:uid:gid:...
	groups := readColon(t, "/etc/group")  // name:x:gid:members
	if len(passwd) == 0 || len(groups) == 0 {
		t.Fatal("no entries in /etc/passwd or /etc/group")
	}
	oracle := func(gname string, gid, peerUID, peerGID uint32) bool {
		if peerGID == gid {
			return true
		}
		for _, p := range passwd {
			if p[2] != strconv.FormatUint(uint64(peerUID), 10) {
				continue
			}
			if p[3] == strconv.FormatUint(uint64(gid), 10) {
				return true
			}
			for _, g := range groups {
				if g[0] == gname && len(g) > 3 && containsName(g[3], p[0]) {
					return true
				}
			}
			return false // os/user takes the first entry of a uid
		}
		return false
	}
	rng := rand.New(rand.NewPCG(13, 3))
	var uids, gids []uint32
	for _, p := range passwd {
		uids = append(uids, atou(t, p[2]))
		gids = append(gids, atou(t, p[3]))
	}
	for range 20 {
		uids = append(uids, rng.Uint32N(70000))
		gids = append(gids, rng.Uint32N(70000))
	}
	for _, g := range groups {
		r := &Rule{Group: g[0]}
		if err := r.Resolve(); err != nil {
			t.Fatal(err)
		}
		gid := atou(t, g[2])
		for range 200 {
			uid, pgid := uids[rng.IntN(len(uids))], gids[rng.IntN(len(gids))]
			if got, want := r.Allows(uid, pgid), oracle(g[0], gid, uid, pgid); got != want {
				t.Fatalf("group %s (gid %d), peer uid %d gid %d: Allows %v, the files say %v", g[0], gid, uid, pgid, got, want)
			}
		}
	}
	for _, p := range passwd {
		r := &Rule{User: p[0]}
		if err := r.Resolve(); err != nil {
			t.Fatal(err)
		}
		uid := atou(t, p[2])
		for range 50 {
			peer, pgid := uids[rng.IntN(len(uids))], gids[rng.IntN(len(gids))]
			if got := r.Allows(peer, pgid); got != (peer == uid) {
				t.Fatalf("user %s (uid %d), peer uid %d gid %d: Allows %v", p[0], uid, peer, pgid, got)
			}
		}
	}
}

func readColon(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func containsName(members, name string) bool {
	for _, m := range strings.Split(members, ",") {
		if m == name {
			return true
		}
	}
	return false
}

func atou(t *testing.T, s string) uint32 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}

// TestRuleRoundTrip: a rule rendered by go-toml (as the deployment renders
// each role's [peers]) reads back as the same rule, and only the key set
// is written.
func TestRuleRoundTrip(t *testing.T) {
	var in peersFile
	in.Peers.A = &Rule{User: "nobody"}
	in.Peers.B = &Rule{Group: "nogroup"}
	data, err := toml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "group = ''") || strings.Contains(string(data), "user = ''") {
		t.Fatalf("an empty key is written:\n%s", data)
	}
	var out peersFile
	if err := wire.DecodeConfig("peers.toml", data, &out); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	for _, r := range []*Rule{out.Peers.A, out.Peers.B} {
		if err := r.Resolve(); err != nil {
			t.Fatal(err)
		}
	}
	if out.Peers.A.String() != "user nobody (uid 65534)" || out.Peers.B.String() != "group nogroup (gid 65534)" {
		t.Fatalf("read back %v and %v from\n%s", out.Peers.A, out.Peers.B, data)
	}
}
