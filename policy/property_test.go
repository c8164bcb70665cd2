package policy_test

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"boxmaker/policy"
	"boxmaker/wire"
)

var (
	seedFlag  = flag.Uint64("policy.seed", 0, "seed for the property tests (0: a fresh one, printed on failure)")
	casesFlag = flag.Int("policy.cases", 100_000, "cases for the in-memory property test")
	diskFlag  = flag.Int("policy.disk", 2_000, "cases for the property test through files on disk")
)

func propertySeed() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return uint64(time.Now().UnixNano())
}

// shards split the cases so the two cores share them; each shard has its own
// generator, seeded from the one seed, so a run still reproduces from it.
const shards = 4

// TestPropertyInMemory: generated grant sets, taints and requests, decided
// through every loading rule after TOML decoding, agree with the oracle.
func TestPropertyInMemory(t *testing.T) {
	seed := propertySeed()
	var mu sync.Mutex
	counts := map[string]int{}
	t.Run("shards", func(t *testing.T) {
		for shard := range shards {
			t.Run(strconv.Itoa(shard), func(t *testing.T) {
				t.Parallel()
				x := newXorshift(seed + uint64(shard))
				local := map[string]int{}
				for i := range *casesFlag / shards {
					c := x.genCase()
					req := request(c.tool, c.args.json())
					d := policy.DecideGrantsIn(c.grants, protectedSet(t, c.given), c.check, policy.Scope{Job: c.scope}, req, policy.State{Taint: c.taint}, c.now)
					local[outcomeName(d)]++
					want := oracleWith(c, c.protected)
					if want.outcome == "allowed" && want.secret != nil {
						local["allowed with a secret"]++
					}
					// Scope (issue 17): a job's session allowed by its
					// grant, and a call a grant out of scope would have
					// allowed.
					if want.outcome == "allowed" && c.scope != "" {
						local["allowed in a job"]++
					}
					if want.outcome == "allowed" && (c.tool == "remember" || c.tool == "recall") {
						local["allowed a memory tool"]++
					}
					if want.outcome == "no_grant" && !onlyScope(c) {
						local["no_grant by scope alone"]++
					}
					if !agree(t, c, c.protected, d) {
						t.Fatalf("shard %d case %d disagrees; rerun with -policy.seed=%d", shard, i, seed)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				for k, v := range local {
					counts[k] += v
				}
			})
		}
	})
	t.Logf("seed %d: %v", seed, counts)
	// The generator must reach every outcome, or the test proves little.
	for _, o := range []string{"allowed", "ask", "denied_by_grant", "no_grant", "grant_expired",
		"taint_too_high", "invalid_arguments", "grants_invalid", "state_unreadable", "secret_unavailable", "allowed with a secret",
		"allowed in a job", "allowed a memory tool", "no_grant by scope alone"} {
		if counts[o] == 0 && *casesFlag >= 100_000 {
			t.Errorf("no case ended %s; seed %d", o, seed)
		}
	}
}

// onlyScope reports whether c decides no_grant with every grant's job
// dropped too: false means scope alone made it no_grant.
func onlyScope(c genCase) bool {
	unscoped := c
	unscoped.scope = ""
	unscoped.grants = map[string]wire.Grant{}
	for id, g := range c.grants {
		g.Job = nil
		unscoped.grants[id] = g
	}
	return oracleWith(unscoped, c.protected).outcome == "no_grant"
}

// TestPropertyOnDisk: the same through real files and Decide, fewer cases.
func TestPropertyOnDisk(t *testing.T) {
	seed := propertySeed()
	root := t.TempDir()
	for shard := range shards {
		t.Run(strconv.Itoa(shard), func(t *testing.T) {
			t.Parallel()
			x := newXorshift(seed ^ 0xd15c + uint64(shard))
			for i := range *diskFlag / shards {
				c := x.genCase()
				dir, err := os.MkdirTemp(root, "g")
				if err != nil {
					t.Fatal(err)
				}
				for id, g := range c.grants {
					if err := os.WriteFile(filepath.Join(dir, id+".toml"), []byte(tomlFile(g)), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				// The grants directory is protected too: a grant of "/"
				// contains it.
				g := policy.NewGrantsDir(dir, protectedSet(t, c.given))
				g.SetSecretCheck(c.check)
				d := g.DecideIn(policy.Scope{Job: c.scope}, request(c.tool, c.args.json()), policy.State{Taint: c.taint}, c.now)
				if !agree(t, c, append(c.protected, dir), d) {
					t.Fatalf("shard %d case %d disagrees; rerun with -policy.seed=%d", shard, i, seed)
				}
			}
		})
	}
}

// protectedSet is the paths as policy takes them.
func protectedSet(t *testing.T, paths []string) *policy.Protected {
	var pp []policy.ProtectedPath
	for _, p := range paths {
		pp = append(pp, policy.ProtectedPath{Path: p, What: "a protected path"})
	}
	set, err := policy.NewProtected(pp)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// agree compares a decision with the oracle, which protects the paths
// protected, and reports the case if not.
func agree(t *testing.T, c genCase, protected []string, d policy.Decision) bool {
	t.Helper()
	want := oracleWith(c, protected)
	got := expect{outcome: outcomeName(d), grant: grantID(d)}
	if got.outcome == "allowed" {
		a, err := d.Claim()
		if err != nil {
			t.Errorf("allowed but Claim failed: %v", err)
			return false
		}
		got.paths, got.hosts = a.Paths(), a.Hosts()
		if u, ok := a.Secret(); ok {
			got.secret = &u
		}
	} else {
		want.paths, want.hosts, want.secret = nil, nil, nil
	}
	if got.outcome == want.outcome && got.grant == want.grant && sameList(got.paths, want.paths) && sameList(got.hosts, want.hosts) &&
		sameSecret(got.secret, want.secret) {
		return true
	}
	t.Errorf("policy %+v, oracle %+v\ntool %q args %s taint %v scope %q protected %q\ngrants:", got, want, c.tool, c.args.json(), c.taint, c.scope, protected)
	for id, g := range c.grants {
		t.Errorf("  %q: %s", id, describe(g))
	}
	return false
}

func sameSecret(a, b *policy.SecretUse) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.File == b.File && a.Header == b.Header && a.Format == b.Format && sameList(a.Hosts, b.Hosts)
}

func sameList(a, b []string) bool { return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b) }

func describe(g wire.Grant) string {
	exp := "never"
	if g.Expires != nil {
		exp = g.Expires.String()
	}
	job := "none"
	if g.Job != nil {
		job = tomlString(*g.Job)
	}
	return g.Tool + " " + g.Mode.String() + " max " + g.MaxTaint.String() + " result " + g.ResultClass.String() + " expires " + exp + " job " + job +
		" paths " + quoteList(g.Constraints.Paths) + " hosts " + quoteList(g.Constraints.Hosts) + describeSecret(g)
}

func describeSecret(g wire.Grant) string {
	s := ""
	for _, k := range []struct {
		key string
		v   *string
	}{{"secret", g.Secret}, {"header", g.SecretHeader}, {"format", g.SecretFormat}, {"deliver", g.SecretDeliver}} {
		if k.v != nil {
			s += " " + k.key + " " + tomlString(*k.v)
		}
	}
	if g.SecretHosts != nil {
		s += " secret_hosts " + tomlList(g.SecretHosts)
	}
	return s
}

func quoteList(l []string) string { return reflect.ValueOf(l).String() + " " + tomlList(l) }

func tomlList(l []string) string {
	s := "["
	for i, v := range l {
		if i > 0 {
			s += ", "
		}
		s += tomlString(v)
	}
	return s + "]"
}
