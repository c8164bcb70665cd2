package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

func TestZeroDecisionDenies(t *testing.T) {
	var d policy.Decision
	if got := outcomeName(d); got != "no_grant" {
		t.Errorf("outcome %s", got)
	}
	if _, ok := d.Grant(); ok || d.Args() != nil || d.Problems() != nil {
		t.Error("the zero Decision describes something")
	}
	if a, err := d.Claim(); !errors.Is(err, policy.ErrZeroDecision) || a.Tool() != 0 || a.Args() != nil {
		t.Errorf("Claim: %v, %v", a, err)
	}
	if _, err := policy.Redecide(grantsDir(t, nil), d, private, now); !errors.Is(err, policy.ErrZeroDecision) {
		t.Errorf("Redecide: %v", err)
	}
	var a policy.Allowed
	if a.Tool().Valid() || a.GrantID() != "" || a.Paths() != nil || a.Hosts() != nil {
		t.Error("the zero Allowed describes something")
	}
}

func allowedDecision(t *testing.T) policy.Decision {
	t.Helper()
	dir := grantsDir(t, map[string]string{"a.toml": grantFile("auto", "secret", "")})
	d := policy.Decide(dir, readN, private, now)
	if outcomeName(d) != "allowed" {
		t.Fatal(outcomeName(d))
	}
	return d
}

func TestClaimOnce(t *testing.T) {
	d := allowedDecision(t)
	a, err := d.Claim()
	if err != nil || a.Tool() != policy.ReadFile || a.GrantID() != "a" {
		t.Fatalf("first Claim: %+v, %v", a, err)
	}
	if _, err := d.Claim(); !errors.Is(err, policy.ErrAlreadyClaimed) {
		t.Errorf("second Claim: %v", err)
	}
}

// TestCopySharesClaim: a copy of a Decision is the same decision.
func TestCopySharesClaim(t *testing.T) {
	d := allowedDecision(t)
	c := d
	if _, err := c.Claim(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(); !errors.Is(err, policy.ErrAlreadyClaimed) {
		t.Errorf("the original after the copy's Claim: %v", err)
	}
	pair := []policy.Decision{allowedDecision(t)}
	pair = append(pair, pair[0])
	if _, err := pair[1].Claim(); err != nil {
		t.Fatal(err)
	}
	if _, err := pair[0].Claim(); !errors.Is(err, policy.ErrAlreadyClaimed) {
		t.Errorf("a copy in a slice: %v", err)
	}
}

// TestClaimRace: many goroutines, many copies, one success.
func TestClaimRace(t *testing.T) {
	for range 20 {
		d := allowedDecision(t)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 32 {
			c := d
			wg.Go(func() {
				if _, err := c.Claim(); err == nil {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("%d successful claims", n)
		}
	}
}

func TestDenialsAndAskDoNotClaim(t *testing.T) {
	for _, tc := range []struct {
		mode string
		err  error
	}{{"deny", policy.ErrDenied}, {"ask", policy.ErrAwaitingApproval}} {
		d := policy.Decide(grantsDir(t, map[string]string{"a.toml": grantFile(tc.mode, "secret", "")}), readN, private, now)
		for range 2 {
			if _, err := d.Claim(); !errors.Is(err, tc.err) {
				t.Errorf("%s: %v", tc.mode, err)
			}
		}
	}
	d := policy.Decide(grantsDir(t, nil), readN, private, now)
	if _, err := d.Claim(); !errors.Is(err, policy.ErrDenied) {
		t.Errorf("no_grant: %v", err)
	}
}

// askDecision decides readN under one ask grant in a fresh directory.
func askDecision(t *testing.T) (string, policy.Decision) {
	t.Helper()
	dir := grantsDir(t, map[string]string{"a.toml": grantFile("ask", "private", "")})
	d := policy.Decide(dir, readN, private, now)
	if outcomeName(d) != "ask" {
		t.Fatal(outcomeName(d))
	}
	return dir, d
}

func writeGrant(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRedecide: the approval path (M3a §6) decides again with the grants and
// state as they are now.
func TestRedecide(t *testing.T) {
	t.Run("still ask runs", func(t *testing.T) {
		dir, prev := askDecision(t)
		d, err := policy.Redecide(dir, prev, private, now)
		if err != nil || outcomeName(d) != "ask" {
			t.Fatalf("%s, %v", outcomeName(d), err)
		}
		if a, err := d.Claim(); err != nil || a.GrantID() != "a" {
			t.Errorf("Claim: %v", err)
		}
		if _, err := d.Claim(); !errors.Is(err, policy.ErrAlreadyClaimed) {
			t.Errorf("second Claim: %v", err)
		}
	})
	t.Run("now auto runs under the grant matched now", func(t *testing.T) {
		dir, prev := askDecision(t)
		writeGrant(t, dir, "a.toml", grantFile("auto", "private", ""))
		d, err := policy.Redecide(dir, prev, private, now)
		if err != nil || outcomeName(d) != "allowed" {
			t.Fatalf("%s, %v", outcomeName(d), err)
		}
		g, _ := d.Grant()
		a, err := d.Claim()
		if err != nil || g.Sha256 != wire.Sha256([]byte(grantFile("auto", "private", ""))) || a.GrantSha256() != g.Sha256 {
			t.Errorf("Claim: %v; grant %+v", err, g)
		}
	})
	t.Run("grant removed", func(t *testing.T) {
		dir, prev := askDecision(t)
		if err := os.Remove(filepath.Join(dir, "a.toml")); err != nil {
			t.Fatal(err)
		}
		d, err := policy.Redecide(dir, prev, private, now)
		if err != nil || outcomeName(d) != "no_grant" {
			t.Errorf("%s, %v", outcomeName(d), err)
		}
		if _, err := d.Claim(); !errors.Is(err, policy.ErrDenied) {
			t.Errorf("Claim: %v", err)
		}
	})
	t.Run("taint rose", func(t *testing.T) {
		dir, prev := askDecision(t)
		d, err := policy.Redecide(dir, prev, policy.State{Taint: wire.Secret}, now)
		if err != nil || outcomeName(d) != "taint_too_high" {
			t.Errorf("%s, %v", outcomeName(d), err)
		}
	})
	t.Run("now deny", func(t *testing.T) {
		dir, prev := askDecision(t)
		writeGrant(t, dir, "b.toml", grantFile("deny", "secret", ""))
		d, err := policy.Redecide(dir, prev, private, now)
		if err != nil || outcomeName(d) != "denied_by_grant" {
			t.Errorf("%s, %v", outcomeName(d), err)
		}
	})
	t.Run("once only", func(t *testing.T) {
		dir, prev := askDecision(t)
		if _, err := policy.Redecide(dir, prev, private, now); err != nil {
			t.Fatal(err)
		}
		copied := prev
		if d, err := policy.Redecide(dir, copied, private, now); !errors.Is(err, policy.ErrAlreadyClaimed) || outcomeName(d) != "no_grant" {
			t.Errorf("second Redecide: %s, %v", outcomeName(d), err)
		}
		if _, err := prev.Claim(); !errors.Is(err, policy.ErrAwaitingApproval) {
			t.Errorf("Claim of the pending decision: %v", err)
		}
	})
	t.Run("only ask decisions from Decide", func(t *testing.T) {
		dir, prev := askDecision(t)
		d, _ := policy.Redecide(dir, prev, private, now)
		if _, err := policy.Redecide(dir, d, private, now); !errors.Is(err, policy.ErrNotPending) {
			t.Errorf("re-deciding a re-decision: %v", err)
		}
		if _, err := policy.Redecide(dir, allowedDecision(t), private, now); !errors.Is(err, policy.ErrNotPending) {
			t.Errorf("re-deciding an allowed decision: %v", err)
		}
	})
}
