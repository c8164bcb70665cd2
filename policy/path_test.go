package policy_test

import (
	"strings"
	"testing"

	"boxmaker/policy"
)

// TestPathsTable is every row of M3a §3's "Paths" table, through Decide. The
// last row has changed since (issue 12, loading rule 9): a grant of "/"
// contains the grants directory, so the set is invalid; PathInside("/", p)
// still holds for every p.
func TestPathsTable(t *testing.T) {
	for _, tc := range []struct{ grant, requested, want string }{
		{"/home/kyle/notes", "/home/kyle/notes/a.md", "allowed"},
		{"/home/kyle/notes", "/home/kyle/notes", "allowed"},
		{"/home/kyle/notes", "/home/kyle/notes2/a.md", "no_grant"},
		{"/home/kyle/notes", "/home/kyle/notes/../.ssh/id", "invalid_arguments"},
		{"/home/kyle/notes", "notes/a.md", "invalid_arguments"},
		{"/home/kyle/notes", "/home/kyle//notes/./a.md", "invalid_arguments"},
		{"/", "/etc/passwd", "grants_invalid"},
	} {
		dir := grantsDir(t, map[string]string{"g.toml": simple("read_file", `paths = ["`+tc.grant+`"]`)})
		d := policy.Decide(dir, request("read_file", `{"path":"`+tc.requested+`"}`), private, now)
		if got := outcomeName(d); got != tc.want {
			t.Errorf("grant %q, read %q: got %s, want %s", tc.grant, tc.requested, got, tc.want)
		}
	}
	if !policy.PathInside("/", "/etc/passwd") {
		t.Error(`"/" does not cover /etc/passwd`)
	}
}

// pathCases also seed FuzzPath.
var pathCases = []struct {
	path string
	ok   bool
}{
	{"/", true},
	{"/a", true},
	{"/a/b.c/..d/...", true},
	{"/a b/ü", true},
	{"/" + strings.Repeat("a", policy.MaxPathBytes-1), true},
	{"/" + strings.Repeat("a", policy.MaxPathBytes), false},
	{"", false},
	{"a", false},
	{"./a", false},
	{"//", false},
	{"/a/", false},
	{"/a//b", false},
	{"/./a", false},
	{"/a/.", false},
	{"/..", false},
	{"/a/../b", false},
	{"/a\x00b", false},
}

func TestCheckPath(t *testing.T) {
	for _, tc := range pathCases {
		if got := policy.ValidPath(tc.path); got != tc.ok {
			t.Errorf("ValidPath(%q) = %v, want %v", tc.path, got, tc.ok)
		}
	}
}

func TestPathInside(t *testing.T) {
	for _, tc := range []struct {
		dir, p string
		in     bool
	}{
		{"/home/kyle/notes", "/home/kyle/notes/a.md", true},
		{"/home/kyle/notes", "/home/kyle/notes", true},
		{"/home/kyle/notes", "/home/kyle/notes2/a.md", false},
		{"/home/kyle/notes", "/home/kyle", false},
		{"/", "/", true},
		{"/", "/etc/passwd", true},
		{"/a", "/a/../b", false}, // invalid path
		{"/a/", "/a/b", false},   // invalid grant path
		{"/a", "/ab", false},     // not by whole components
		{"/a/b", "/a/b/c/d", true},
	} {
		if got := policy.PathInside(tc.dir, tc.p); got != tc.in {
			t.Errorf("PathInside(%q, %q) = %v, want %v", tc.dir, tc.p, got, tc.in)
		}
	}
}

// TestLongestPathWins: the matched path is the longest grant path holding the
// argument, whatever the order in the file.
func TestLongestPathWins(t *testing.T) {
	dir := grantsDir(t, map[string]string{"g.toml": simple("read_file", `paths = ["/home", "/home/kyle/notes", "/home/kyle"]`)})
	d := policy.Decide(dir, request("read_file", `{"path":"/home/kyle/notes/a.md"}`), private, now)
	a, err := d.Claim()
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Paths(); len(got) != 1 || got[0] != "/home/kyle/notes" {
		t.Errorf("matched paths %q, want [/home/kyle/notes]", got)
	}
}
