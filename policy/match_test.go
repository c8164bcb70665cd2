package policy_test

import (
	"fmt"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

// grantFile is a read_file grant on /n with the given mode, max_taint and
// expires ("" for none).
func grantFile(mode, maxTaint, expires string) string {
	s := fmt.Sprintf("tool = \"read_file\"\nmode = %q\nmax_taint = %q\n", mode, maxTaint)
	if expires != "" {
		s += fmt.Sprintf("expires = %q\n", expires)
	}
	return s + "[constraints]\npaths = [\"/n\"]\n"
}

var readN = request("read_file", `{"path":"/n/a"}`)

// TestModePrecedence: among three matching grants, deny beats ask beats auto,
// whatever their ids.
func TestModePrecedence(t *testing.T) {
	for _, tc := range []struct {
		files    map[string]string
		want, by string
	}{
		{map[string]string{"a.toml": grantFile("auto", "secret", ""), "b.toml": grantFile("ask", "secret", ""), "c.toml": grantFile("deny", "secret", "")}, "denied_by_grant", "c"},
		{map[string]string{"a.toml": grantFile("deny", "secret", ""), "b.toml": grantFile("ask", "secret", ""), "c.toml": grantFile("auto", "secret", "")}, "denied_by_grant", "a"},
		{map[string]string{"a.toml": grantFile("auto", "secret", ""), "b.toml": grantFile("auto", "secret", ""), "c.toml": grantFile("ask", "secret", "")}, "ask", "c"},
		{map[string]string{"a.toml": grantFile("auto", "secret", ""), "b.toml": grantFile("auto", "secret", ""), "c.toml": grantFile("auto", "secret", "")}, "allowed", "a"},
	} {
		d := policy.Decide(grantsDir(t, tc.files), readN, private, now)
		if got := outcomeName(d); got != tc.want || grantID(d) != tc.by {
			t.Errorf("got %s by %q, want %s by %q", got, grantID(d), tc.want, tc.by)
		}
	}
}

// TestTiesByID: equal modes go to the lowest id in byte order ("B" < "a" is
// not possible in ids; "a-b" < "a0" < "ab" is).
func TestTiesByID(t *testing.T) {
	files := map[string]string{"ab.toml": grantFile("ask", "secret", ""), "a0.toml": grantFile("ask", "secret", ""), "a-b.toml": grantFile("ask", "secret", "")}
	d := policy.Decide(grantsDir(t, files), readN, private, now)
	if got := outcomeName(d); got != "ask" || grantID(d) != "a-b" {
		t.Errorf("got %s by %q", got, grantID(d))
	}
}

// TestReasonOrder: with no grant left, grant_expired beats taint_too_high
// beats no_grant; "only by" means the other checks pass.
func TestReasonOrder(t *testing.T) {
	past := "2026-01-01T00:00:00.000Z"
	outside := "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nexpires = \"2026-01-01T00:00:00.000Z\"\n[constraints]\npaths = [\"/m\"]\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		taint wire.DataClass
		want  string
	}{
		{"one expired, one too tainted", map[string]string{"a.toml": grantFile("auto", "private", ""), "b.toml": grantFile("auto", "secret", past)}, wire.Secret, "grant_expired"},
		{"ids the other way", map[string]string{"b.toml": grantFile("auto", "private", ""), "a.toml": grantFile("auto", "secret", past)}, wire.Secret, "grant_expired"},
		{"expired and too tainted is neither", map[string]string{"a.toml": grantFile("auto", "private", past)}, wire.Secret, "no_grant"},
		{"expired and too tainted, plus one too tainted", map[string]string{"a.toml": grantFile("auto", "private", past), "b.toml": grantFile("auto", "public", "")}, wire.Secret, "taint_too_high"},
		{"expired but not covering", map[string]string{"a.toml": outside}, wire.Private, "no_grant"},
		{"too tainted only", map[string]string{"a.toml": grantFile("auto", "public", "")}, wire.Private, "taint_too_high"},
		{"taint equal to max passes", map[string]string{"a.toml": grantFile("auto", "private", "")}, wire.Private, "allowed"},
		{"expired only", map[string]string{"a.toml": grantFile("deny", "secret", past)}, wire.Secret, "grant_expired"},
		{"a live grant beats an expired one", map[string]string{"a.toml": grantFile("deny", "secret", past), "b.toml": grantFile("auto", "secret", "")}, wire.Secret, "allowed"},
	} {
		d := policy.Decide(grantsDir(t, tc.files), readN, policy.State{Taint: tc.taint}, now)
		if got := outcomeName(d); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestTooTaintedButNotCovering: a grant ruled out by taint that would not
// have covered the call anyway is not "only by taint".
func TestTooTaintedButNotCovering(t *testing.T) {
	files := map[string]string{"a.toml": grantFile("auto", "public", "")}
	d := policy.Decide(grantsDir(t, files), request("read_file", `{"path":"/m"}`), private, now)
	if got := outcomeName(d); got != "no_grant" {
		t.Errorf("got %s", got)
	}
}

// TestExpiryBoundary: denied at exactly expires, allowed 1 ms before.
func TestExpiryBoundary(t *testing.T) {
	expires := "2026-09-18T12:00:00.000Z"
	dir := grantsDir(t, map[string]string{"a.toml": grantFile("auto", "secret", expires)})
	at := mustTime(expires)
	if got := outcomeName(policy.Decide(dir, readN, private, at)); got != "grant_expired" {
		t.Errorf("at expires: %s", got)
	}
	if got := outcomeName(policy.Decide(dir, readN, private, at-1)); got != "allowed" {
		t.Errorf("1 ms before: %s", got)
	}
}

// TestInvalidState: a taint that is not one of the three classes denies
// rather than comparing below every max_taint.
func TestInvalidState(t *testing.T) {
	dir := grantsDir(t, map[string]string{"a.toml": grantFile("auto", "public", "")})
	for _, st := range []policy.State{{}, {Taint: 4}} {
		if got := outcomeName(policy.Decide(dir, readN, st, now)); got != "state_unreadable" {
			t.Errorf("taint %d: %s", st.Taint, got)
		}
	}
}

// TestGrantInfo: the decision names the grant, its file's hash and its
// result class and untrusted flag (defaults: private, true).
func TestGrantInfo(t *testing.T) {
	content := grantFile("ask", "secret", "2027-01-01T00:00:00.000Z")
	d := policy.Decide(grantsDir(t, map[string]string{"notes-read.toml": content}), readN, private, now)
	g, ok := d.Grant()
	if !ok || g.ID != "notes-read" || g.Sha256 != wire.Sha256([]byte(content)) || g.Mode != wire.Ask ||
		g.ResultClass != wire.Private || !g.Untrusted || g.Expires == nil || *g.Expires != mustTime("2027-01-01T00:00:00.000Z") {
		t.Errorf("grant %+v, %v", g, ok)
	}
	if d.Request() != readN || d.State() != private {
		t.Errorf("request %+v state %+v", d.Request(), d.State())
	}
	if a, ok := d.Args().(policy.ReadFileArgs); !ok || a.Path != "/n/a" {
		t.Errorf("args %#v", d.Args())
	}
}

// TestDeniedByGrantNamesIt: a deny grant's decision names it, for the audit.
func TestDeniedByGrantNamesIt(t *testing.T) {
	d := policy.Decide(grantsDir(t, map[string]string{"no.toml": grantFile("deny", "secret", "")}), readN, private, now)
	if got := outcomeName(d); got != "denied_by_grant" || grantID(d) != "no" || d.Reason() != wire.DeniedByGrant {
		t.Errorf("got %s by %q", got, grantID(d))
	}
}
