package deploy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// who lists the subjects the plan's matrix allows op on path.
func who(p Plan, op, path string) []string {
	var out []string
	for _, s := range Subjects {
		if p.Allowed(s, op, path) {
			out = append(out, s)
		}
	}
	return out
}

// The access matrix says what the issue and pre-M1 §4 say, cell by cell:
// each socket reaches only its listener and its one client; each state
// path is written only by its role and read only by those that need it.
func TestAccessMatrixIsTheIntent(t *testing.T) {
	p := New(Default())
	h := func(s ...string) string { return filepath.Join(append([]string{p.Home}, s...)...) }
	e := func(s ...string) string { return filepath.Join(append([]string{p.Etc}, s...)...) }
	for _, tc := range []struct {
		op, path string
		want     []string
	}{
		{"connect", h("run", "loop-broker", "broker.sock"), []string{"loopd", "brokerd"}},
		{"connect", h("run", "owner-broker", "admin.sock"), []string{"brokerd", "owner"}},
		{"connect", h("run", "loop-infer", "infer.sock"), []string{"loopd", "inferproxy"}},
		{"connect", h("run", "broker-gateway", "gateway.sock"), []string{"brokerd", "gatewayd"}},
		{"connect", h("run", "owner-loop", "loop.sock"), []string{"loopd", "owner"}},
		{"connect", h("run", "gateway-loop", "loop.sock"), []string{"loopd", "gatewayd"}},
		{"connect", h("run", "broker-tools", "podman.sock"), []string{"brokerd", "tools"}},
		{"connect", h("run", "broker-loop", "loop.sock"), []string{"loopd", "brokerd"}},
		{"read", h("audit"), []string{"brokerd", "owner"}},
		{"write", h("audit"), []string{"brokerd"}},
		{"read", h("broker"), []string{"brokerd"}},
		{"write", h("broker"), []string{"brokerd"}},
		{"read", h("sessions"), []string{"loopd"}},
		{"write", h("sessions"), []string{"loopd"}},
		{"read", h("memory"), []string{"loopd"}},
		{"write", h("memory"), nil},
		// Notes carry labels only brokerd may stamp, and untrusted ones
		// must never reach a prompt unasked: loopd cannot read them.
		{"read", h("memory", "notes"), []string{"brokerd"}},
		{"write", h("memory", "notes"), []string{"brokerd"}},
		{"read", h("index"), []string{"brokerd"}},
		{"write", h("index"), []string{"brokerd"}},
		{"read", e("jobs"), []string{"brokerd"}},
		{"write", e("jobs"), nil},
		{"read", h("gateway"), []string{"gatewayd"}},
		{"write", h("gateway"), []string{"gatewayd"}},
		{"read", h("tools"), []string{"tools"}},
		{"read", e("grants"), []string{"brokerd"}},
		{"write", e("grants"), nil},
		{"read", e("secrets"), []string{"brokerd"}},
		{"write", e("secrets"), []string{"brokerd"}},
		{"read", e("brokerd.toml"), []string{"brokerd"}},
		{"write", e("brokerd.toml"), nil},
		{"read", e("gatewayd.token"), nil},
	} {
		if got := who(p, tc.op, tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: allowed to %v, want %v", tc.op, tc.path, got, tc.want)
		}
	}
}

// Every state path and socket is in the matrix for every subject, and no
// cell is there twice: the live test checks each one.
func TestAccessMatrixIsComplete(t *testing.T) {
	p := New(Default())
	seen := map[string]bool{}
	for _, a := range p.Access {
		k := a.Subject + " " + a.Op + " " + a.Path
		if seen[k] {
			t.Fatalf("cell %s twice", k)
		}
		seen[k] = true
	}
	n := 0
	for _, x := range p.Paths {
		if x.State {
			n++
		}
	}
	if want := len(Subjects) * (len(p.Sockets) + 2*n); len(p.Access) != want {
		t.Fatalf("%d cells, want %d", len(p.Access), want)
	}
	// Nothing in the home or /etc/boxmaker is writable by a subject other
	// than its owner: no group or other write bit anywhere.
	for _, x := range p.Paths {
		if x.Kind != KindLink && strings.ContainsAny(x.Mode[len(x.Mode)-2:], "2367") {
			t.Errorf("%s mode %s lets its group or others write", x.Path, x.Mode)
		}
	}
}
