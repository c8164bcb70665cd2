package policy_test

import (
	"fmt"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

// memoryGrant is a grant file for a memory tool: mode, max_taint, an
// optional job and an optional expiry, and nothing else.
func memoryGrant(tool, mode, maxTaint, job, expires string) string {
	s := fmt.Sprintf("tool = %q\nmode = %q\nmax_taint = %q\n", tool, mode, maxTaint)
	if job != "" {
		s += fmt.Sprintf("job = %q\n", job)
	}
	if expires != "" {
		s += fmt.Sprintf("expires = %q\n", expires)
	}
	return s
}

// TestScopeTable: a grant scoped to job X applies only in X's sessions; an
// unscoped grant only in interactive ones; a job's session sees nothing
// else. Each mode, scoped or not, in each scope.
func TestScopeTable(t *testing.T) {
	const args = `{"query":"tea"}`
	for _, mode := range []string{"auto", "ask", "deny"} {
		want := map[string]string{"auto": "allowed", "ask": "ask", "deny": "denied_by_grant"}[mode]
		for _, tc := range []struct {
			grantJob string // "" : unscoped
			scope    string
			want     string
		}{
			{"", "", want},
			{"", "x", "no_grant"},
			{"", "y", "no_grant"},
			{"x", "", "no_grant"},
			{"x", "x", want},
			{"x", "y", "no_grant"},
		} {
			name := fmt.Sprintf("%s grant job %q scope %q", mode, tc.grantJob, tc.scope)
			t.Run(name, func(t *testing.T) {
				dir := grantsDir(t, map[string]string{"g.toml": memoryGrant("recall", mode, "secret", tc.grantJob, "")})
				d := policy.NewGrantsDir(dir, nil).DecideIn(policy.Scope{Job: tc.scope}, request("recall", args), private, now)
				if got := outcomeName(d); got != tc.want {
					t.Fatalf("got %s, want %s", got, tc.want)
				}
				if d.Scope() != (policy.Scope{Job: tc.scope}) {
					t.Fatalf("the decision's scope is %+v", d.Scope())
				}
			})
		}
	}
}

// TestScopeHidesOtherGrants: where a job's grant and an interactive grant
// both cover a call, each scope gets its own: a job's deny does not reach
// an interactive session, an interactive auto does not reach the job, and
// another job gets neither. Out-of-scope grants do not count for
// grant_expired or taint_too_high either.
func TestScopeHidesOtherGrants(t *testing.T) {
	dir := grantsDir(t, map[string]string{
		"job-deny.toml":     memoryGrant("remember", "deny", "secret", "digest", ""),
		"job-ask.toml":      memoryGrant("remember", "ask", "secret", "digest", ""),
		"open.toml":         memoryGrant("remember", "auto", "secret", "", ""),
		"other-old.toml":    memoryGrant("remember", "auto", "secret", "other", "2026-01-01T00:00:00.000Z"),
		"other-public.toml": memoryGrant("remember", "auto", "public", "other", ""),
		"third.toml":        memoryGrant("recall", "auto", "secret", "third", ""),
	})
	g := policy.NewGrantsDir(dir, nil)
	req := request("remember", `{"title":"t","text":"x"}`)
	for _, tc := range []struct {
		scope, want, grant string
	}{
		{"", "allowed", "open"},
		{"digest", "denied_by_grant", "job-deny"},
		// other's grants are ruled out by expiry and by taint alone: the
		// reasons are theirs, and nothing of digest's or open's leaks in.
		{"other", "grant_expired", ""},
		{"third", "no_grant", ""},
		{"nobody", "no_grant", ""},
	} {
		d := g.DecideIn(policy.Scope{Job: tc.scope}, req, private, now)
		if got, id := outcomeName(d), grantID(d); got != tc.want || id != tc.grant {
			t.Errorf("scope %q: got %s %q, want %s %q", tc.scope, got, id, tc.want, tc.grant)
		}
	}
	// Decide is DecideIn(Scope{}, ...).
	if d := g.Decide(req, private, now); outcomeName(d) != "allowed" || grantID(d) != "open" || d.Scope() != (policy.Scope{}) {
		t.Errorf("Decide: %s %q %+v", outcomeName(d), grantID(d), d.Scope())
	}
}

// TestRedecideKeepsScope: an approval is re-decided in the scope of the
// call it approves. In the job's scope the job's ask grant matches again
// and the call may run; an interactive re-decision would find no grant.
func TestRedecideKeepsScope(t *testing.T) {
	dir := grantsDir(t, map[string]string{"ask.toml": memoryGrant("remember", "ask", "secret", "digest", "")})
	g := policy.NewGrantsDir(dir, nil)
	req := request("remember", `{"title":"t","text":"x"}`)
	d := g.DecideIn(policy.Scope{Job: "digest"}, req, private, now)
	if outcomeName(d) != "ask" {
		t.Fatalf("first decision: %s", outcomeName(d))
	}
	r, err := g.Redecide(d, private, now)
	if err != nil || outcomeName(r) != "ask" || r.Scope() != (policy.Scope{Job: "digest"}) {
		t.Fatalf("Redecide: %s %+v %v", outcomeName(r), r.Scope(), err)
	}
	if _, err := r.Claim(); err != nil {
		t.Fatalf("Claim after approval: %v", err)
	}
	// The same request, decided interactively, has no grant.
	if d := g.Decide(req, private, now); outcomeName(d) != "no_grant" {
		t.Fatalf("interactive: %s", outcomeName(d))
	}
}

// TestMemoryToolsMatch: remember and recall grants match by tool, taint
// and expiry alone, and an allowed call gets no mount, no egress and no
// secret.
func TestMemoryToolsMatch(t *testing.T) {
	for _, tc := range []struct {
		name, tool, file, args string
		taint                  wire.DataClass
		want                   string
	}{
		{"remember", "remember", memoryGrant("remember", "auto", "private", "", ""), `{"title":"t","text":"x","id":"n-1"}`, wire.Private, "allowed"},
		{"recall by id", "recall", memoryGrant("recall", "auto", "private", "", ""), `{"id":"n-1"}`, wire.Public, "allowed"},
		{"recall by words", "recall", memoryGrant("recall", "ask", "secret", "", ""), `{"query":"tea"}`, wire.Secret, "ask"},
		{"taint", "recall", memoryGrant("recall", "auto", "private", "", ""), `{"query":"tea"}`, wire.Secret, "taint_too_high"},
		{"expired", "remember", memoryGrant("remember", "auto", "secret", "", "2026-09-18T12:00:00.000Z"), `{"title":"t","text":""}`, wire.Public, "grant_expired"},
		{"not yet expired", "remember", memoryGrant("remember", "auto", "secret", "", "2026-09-18T12:00:00.001Z"), `{"title":"t","text":""}`, wire.Public, "allowed"},
		{"other tool", "remember", memoryGrant("recall", "auto", "secret", "", ""), `{"title":"t","text":""}`, wire.Public, "no_grant"},
		{"bad arguments", "remember", memoryGrant("remember", "auto", "secret", "", ""), `{"title":"t","text":"","label":"trusted"}`, wire.Public, "invalid_arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := grantsDir(t, map[string]string{"g.toml": tc.file})
			d := policy.NewGrantsDir(dir, nil).Decide(request(tc.tool, tc.args), policy.State{Taint: tc.taint}, now)
			if got := outcomeName(d); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if tc.want != "allowed" {
				return
			}
			a, err := d.Claim()
			if err != nil {
				t.Fatal(err)
			}
			if _, secret := a.Secret(); a.Paths() != nil || a.Hosts() != nil || secret || a.Tool().String() != tc.tool {
				t.Fatalf("allowed %s with paths %v, hosts %v, secret %v", a.Tool(), a.Paths(), a.Hosts(), secret)
			}
		})
	}
}

// TestScopeEndedAndDenyAsks: a job's session whose run has ended sees no
// grant, not even its job's; unattended_ask = "deny" turns the job's ask
// into unattended_denied at once, and leaves auto and deny as they are.
func TestScopeEndedAndDenyAsks(t *testing.T) {
	const args = `{"query":"tea"}`
	for _, tc := range []struct {
		mode  string
		scope policy.Scope
		want  string
	}{
		{"auto", policy.Scope{Job: "x", Ended: true}, "no_grant"},
		{"ask", policy.Scope{Job: "x", Ended: true}, "no_grant"},
		{"deny", policy.Scope{Job: "x", Ended: true}, "no_grant"},
		{"auto", policy.Scope{Job: "x", DenyAsks: true}, "allowed"},
		{"ask", policy.Scope{Job: "x", DenyAsks: true}, "unattended_denied"},
		{"deny", policy.Scope{Job: "x", DenyAsks: true}, "denied_by_grant"},
		{"ask", policy.Scope{Job: "x", DenyAsks: true, Ended: true}, "no_grant"},
		{"ask", policy.Scope{Job: "x"}, "ask"},
	} {
		t.Run(fmt.Sprintf("%s %+v", tc.mode, tc.scope), func(t *testing.T) {
			dir := grantsDir(t, map[string]string{
				"g.toml":           memoryGrant("recall", tc.mode, "secret", "x", ""),
				"interactive.toml": memoryGrant("recall", "auto", "secret", "", ""),
			})
			d := policy.NewGrantsDir(dir, nil).DecideIn(tc.scope, request("recall", args), private, now)
			if got := outcomeName(d); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
