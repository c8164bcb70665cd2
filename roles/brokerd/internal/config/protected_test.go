package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"boxmaker/policy"
)

// TestProtected: the set holds home and every part of it, the grants and
// secrets directories, both sockets' directories where they are, this
// config file and its neighbours, /etc/boxmaker and Podman's places.
func TestProtected(t *testing.T) {
	text := "[paths]\nhome = \"/srv/bx\"\ngrants = \"/srv/grants\"\nsecrets = \"/srv/secrets\"\njobs = \"/srv/jobs\"\n" +
		"[sockets]\nbroker = \"/run/bx/lb/broker.sock\"\nadmin = \"/run/bx/ob/admin.sock\"\ngateway = \"/run/bx/bg/gateway.sock\"\n" +
		"loop = \"/run/bx/bl/loop.sock\"\n" +
		"[podman]\nsocket = \"unix:///run/pm/podman.sock\"\nshared_dir = \"/run/bx/tb\"\n"
	c, err := Parse("/etc/bx/brokerd.toml", []byte(text), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.Protected() {
		if p.What == "" {
			t.Errorf("%s has no description", p.Path)
		}
		got = append(got, p.Path)
	}
	for _, want := range []string{"/srv/bx", "/srv/bx/audit", "/srv/bx/broker/sessions", "/srv/bx/sessions", "/srv/bx/memory",
		"/srv/bx/run/loop-infer", "/srv/grants", "/srv/secrets", "/run/bx/lb", "/run/bx/ob", "/run/bx/bg", "/etc/bx/brokerd.toml",
		"/etc/bx/loopd.toml", "/etc/bx/inferproxy.toml", "/etc/bx/gatewayd.toml", "/etc/boxmaker", "/run/pm",
		"/var/lib/containers/storage", "/run/bx/tb",
		// Issue 17: no grant may write a job, a note, the index, or listen
		// where brokerd starts jobs.
		"/srv/jobs", "/srv/bx/memory/notes", "/srv/bx/index", "/run/bx/bl"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not protected; the set is %q", want, got)
		}
	}
	if _, err := policy.NewProtected(c.Protected()); err != nil {
		t.Error(err)
	}
}

// TestHomePartsMatchLayout: every directory docs/layout.md names under
// BOXMAKER_HOME is in HomeParts (bxctl keeps the same list, with the same
// test), so a part added to the layout is protected or the test fails.
func TestHomePartsMatchLayout(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, p := range HomeParts {
		parts = append(parts, p.Rel)
	}
	named := regexp.MustCompile("(?m)(?:^[├└]── ([a-z]+)/|^\\| `(run/[a-z-]+)/`)").FindAllStringSubmatch(string(doc), -1)
	if len(named) < 10 {
		t.Fatalf("found only %q in docs/layout.md", named)
	}
	for _, m := range named {
		if dir := m[1] + m[2]; !slices.Contains(parts, dir) {
			t.Errorf("docs/layout.md names %s under the home; HomeParts does not", dir)
		}
	}
}
