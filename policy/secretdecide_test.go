package policy_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

const (
	fetchArgs = `{"url":"https://api.example.com/v1"}`
	shellArgs = `{"command":"deploy"}`
)

// checkRecorder is a secret check that refuses the names in missing and
// records every name it was asked.
type checkRecorder struct {
	mu      sync.Mutex
	missing map[string]error
	asked   []string
}

func (c *checkRecorder) check(use policy.SecretUse) error {
	name := use.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, name)
	return c.missing[name]
}

// TestAllowedSecret: Claim hands the runner the secret's name and how it
// is delivered, with the defaults filled in, and nothing for a grant
// without a secret.
func TestAllowedSecret(t *testing.T) {
	for _, tc := range []struct {
		name, file, tool, args string
		want                   *policy.SecretUse
	}{
		{"fetch, defaults", fetchHead + "secret_header = \"Authorization\"\n" + wildHosts, "http_fetch", fetchArgs,
			&policy.SecretUse{Name: "api-key", Header: "Authorization", Format: "{}", Hosts: []string{"*.example.com", "example.org"}}},
		{"fetch, given", fetchHead + "secret_header = \"x-api-key\"\nsecret_format = \"Bearer {}\"\nsecret_hosts = [\"api.example.com\"]\n" + wildHosts, "http_fetch", fetchArgs,
			&policy.SecretUse{Name: "api-key", Header: "x-api-key", Format: "Bearer {}", Hosts: []string{"api.example.com"}}},
		{"shell, file", shellHead + "secret_deliver = \"file\"\n", "shell", shellArgs,
			&policy.SecretUse{Name: "deploy_key", File: true}},
		{"no secret", simple("shell", ""), "shell", shellArgs, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := policy.NewGrantsDir(grantsDir(t, map[string]string{"g.toml": tc.file}), nil)
			rec := &checkRecorder{}
			g.SetSecretCheck(rec.check)
			d := g.Decide(request(tc.tool, tc.args), private, now)
			a, err := d.Claim()
			if err != nil {
				t.Fatalf("%s: %v %v", outcomeName(d), err, d.Problems())
			}
			u, ok := a.Secret()
			info, _ := d.Grant()
			if tc.want == nil {
				if ok || len(rec.asked) != 0 || info.Secret != "" {
					t.Errorf("a secret %+v for a grant without one; asked %v, info %q", u, rec.asked, info.Secret)
				}
				return
			}
			if !ok || !reflect.DeepEqual(u, *tc.want) {
				t.Errorf("Secret() = %+v, %v; want %+v", u, ok, *tc.want)
			}
			if !slices.Equal(rec.asked, []string{tc.want.Name}) || info.Secret != tc.want.Name {
				t.Errorf("the check was asked %v, grant info names %q; want %q once", rec.asked, info.Secret, tc.want.Name)
			}
			// A copy: changing it changes nothing.
			if len(u.Hosts) > 0 {
				u.Hosts[0] = "evil.com"
				if again, _ := a.Secret(); again.Hosts[0] == "evil.com" {
					t.Error("Secret() shares its hosts")
				}
			}
		})
	}
}

// TestSecretUnavailable: an auto or ask grant whose secret the check
// refuses denies the call secret_unavailable, carrying the matched grant
// and the check's error; no ask is posted. A deny grant never asks the
// check, and without a check nothing is refused.
func TestSecretUnavailable(t *testing.T) {
	why := errors.New(`secret "api-key": there is no file /etc/boxmaker/secrets/api-key`)
	fetch := fetchHead + "secret_header = \"Authorization\"\n" + apiHosts
	for _, tc := range []struct {
		name, file string
		check      bool
		want       string
	}{
		{"auto", fetch, true, "secret_unavailable"},
		{"ask", strings.Replace(fetch, "auto", "ask", 1), true, "secret_unavailable"},
		{"deny", strings.Replace(fetch, "auto", "deny", 1), true, "denied_by_grant"},
		{"no check", fetch, false, "allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := policy.NewGrantsDir(grantsDir(t, map[string]string{"fetch-api.toml": tc.file}), nil)
			rec := &checkRecorder{missing: map[string]error{"api-key": why}}
			if tc.check {
				g.SetSecretCheck(rec.check)
			}
			d := g.Decide(request("http_fetch", fetchArgs), private, now)
			if got := outcomeName(d); got != tc.want {
				t.Fatalf("outcome %s, want %s", got, tc.want)
			}
			info, ok := d.Grant()
			if !ok || info.ID != "fetch-api" || info.Secret != "api-key" {
				t.Errorf("grant %+v, %v", info, ok)
			}
			if tc.want == "secret_unavailable" {
				if d.SecretError() != why || d.Reason() != wire.SecretUnavailable {
					t.Errorf("SecretError() = %v, reason %v", d.SecretError(), d.Reason())
				}
				if _, err := d.Claim(); !errors.Is(err, policy.ErrDenied) {
					t.Errorf("Claim of a secret_unavailable decision: %v", err)
				}
			} else if d.SecretError() != nil {
				t.Errorf("SecretError() = %v for %s", d.SecretError(), tc.want)
			}
			if tc.want == "denied_by_grant" && len(rec.asked) != 0 {
				t.Errorf("a deny grant asked the check for %v", rec.asked)
			}
		})
	}
}

// TestRedecideChecksTheSecretAgain: an ask decided while the secret was
// there is denied secret_unavailable when re-decided after it went, and
// allowed once it is back.
func TestRedecideChecksTheSecretAgain(t *testing.T) {
	dir := grantsDir(t, map[string]string{"g.toml": strings.Replace(shellHead, "auto", "ask", 1) + "secret_deliver = \"file\"\n"})
	g := policy.NewGrantsDir(dir, nil)
	rec := &checkRecorder{missing: map[string]error{}}
	g.SetSecretCheck(rec.check)
	req := request("shell", shellArgs)
	set := func(err error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.missing["deploy_key"] = err
	}
	for _, gone := range []bool{true, false} {
		set(nil)
		ask := g.Decide(req, private, now)
		if outcomeName(ask) != "ask" {
			t.Fatalf("first decision %s", outcomeName(ask))
		}
		if gone {
			set(errors.New("gone"))
		}
		d, err := g.Redecide(ask, private, now)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "secret_unavailable", false: "ask"}[gone]
		if outcomeName(d) != want {
			t.Errorf("secret gone %v: re-decision %s, want %s", gone, outcomeName(d), want)
		}
		if _, err := d.Claim(); (err == nil) == gone {
			t.Errorf("secret gone %v: Claim %v", gone, err)
		}
	}
}

// TestGrantsCheckReportsSecrets: Check reports the loading problems and,
// for each valid auto or ask grant whose secret the check refuses, one
// problem on the line of its secret key, even while another file makes
// the set invalid; a deny grant's secret is not checked.
func TestGrantsCheckReportsSecrets(t *testing.T) {
	files := map[string]string{
		"fetch.toml":  fetchHead + "secret_header = \"Authorization\"\n" + apiHosts,
		"shell.toml":  shellHead + "secret_deliver = \"file\"\n",
		"deny.toml":   strings.Replace(shellHead, "auto", "deny", 1) + "secret_deliver = \"file\"\n",
		"plain.toml":  simple("shell", ""),
		"broken.toml": "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nsecret = \"k\"\n",
	}
	dir := grantsDir(t, files)
	g := policy.NewGrantsDir(dir, nil)
	secretErr := &policy.SecretError{Name: "api-key", Problem: "there is no file /s/api-key", See: policy.RunbookSecretUnavailable}
	g.SetSecretCheck(func(use policy.SecretUse) error {
		name := use.Name
		if name == "api-key" {
			return secretErr
		}
		if name == "deploy_key" {
			return errors.New("unsafe\nsee docs/runbook.md#secret-file-unsafe")
		}
		return nil
	})
	ps, err := g.Check()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, policy.FormatProblem(p))
	}
	want := []string{
		`broken.toml:4: result_class: a grant with a secret must say result_class = "secret", not "private" (what leaving it out means): the tool's output may hold the secret in a form no redaction finds`,
		`broken.toml:4: secret_deliver: a shell grant with a secret must say secret_deliver = "file": a shell call has no network, so the secret reaches it only as a file`,
		`fetch.toml:5: secret: "api-key": there is no file /s/api-key; see docs/runbook.md#secret-unavailable`,
		`shell.toml:5: secret: unsafe; see docs/runbook.md#secret-file-unsafe`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, p := range ps {
		if policy.IsSecretProblem(p) != (i >= 2) {
			t.Errorf("IsSecretProblem(%s) = %v", policy.FormatProblem(p), !(i >= 2))
		}
	}
	// Load, and so every decision, still sees only the loading problems.
	if _, loadPs, _ := g.Load(); len(loadPs) != 2 {
		t.Errorf("Load has %d problems, want the 2 loading ones", len(loadPs))
	}
	// Offline, with no check, only the loading rules apply.
	ps, err = policy.CheckGrants(dir, nil, nil)
	if err != nil || len(ps) != 2 {
		t.Errorf("CheckGrants without a check: %v, %v", ps, err)
	}
}

// TestSecretGrantNarrowsInASecretSession: an http_fetch grant that names
// a secret needs max_taint = "secret" to be used twice (its own result
// makes the session secret). Once the session is secret it covers only
// its secret_hosts, and its call's egress is only them: its other hosts
// were never cleared to receive the value, which the session may now hold
// in a form redaction cannot find.
func TestSecretGrantNarrowsInASecretSession(t *testing.T) {
	file := "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"api-key\"\n" +
		"secret_header = \"Authorization\"\nsecret_hosts = [\"api.example.com\"]\n[constraints]\nhosts = [\"api.example.com\", \"*.cdn.example.com\"]\n"
	g := policy.NewGrantsDir(grantsDir(t, map[string]string{"g.toml": file}), nil)
	for _, tc := range []struct {
		taint     wire.DataClass
		url       string
		outcome   string
		wantHosts []string
	}{
		{wire.Private, "https://x.cdn.example.com/a", "allowed", []string{"api.example.com", "*.cdn.example.com"}},
		{wire.Private, "https://api.example.com/a", "allowed", []string{"api.example.com", "*.cdn.example.com"}},
		{wire.Secret, "https://api.example.com/a", "allowed", []string{"api.example.com"}},
		{wire.Secret, "https://x.cdn.example.com/?k=the-value-reversed", "taint_too_high", nil},
	} {
		d := g.Decide(request("http_fetch", `{"url":"`+tc.url+`"}`), policy.State{Taint: tc.taint}, now)
		if got := outcomeName(d); got != tc.outcome {
			t.Errorf("%v %s: %s, want %s", tc.taint, tc.url, got, tc.outcome)
			continue
		}
		if tc.wantHosts == nil {
			continue
		}
		a, err := d.Claim()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Hosts(), tc.wantHosts) {
			t.Errorf("%v %s: egress %v, want %v", tc.taint, tc.url, a.Hosts(), tc.wantHosts)
		}
	}
}
