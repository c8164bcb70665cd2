package serve

import (
	"os"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

// TestHealthReport is bxctl doctor's view of brokerd (issue 27): each check
// in order, failing where the state says it should (no Podman image here,
// a grant file that does not load, a secrets directory others can read),
// and the head of the log: none while it is empty, then its last record.
func TestHealthReport(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto})
	report := func() wire.HealthReport {
		t.Helper()
		rep, ok := h.admin(wire.Health{}).(wire.HealthReport)
		if !ok {
			t.Fatal("no health report")
		}
		return rep
	}
	rep := report()
	want := []struct {
		name   string
		ok     bool
		detail string
		anchor string
	}{
		{"tool runtime", false, "no [podman] image in brokerd.toml: every allowed call fails", "see docs/runbook.md#tool-image-missing"},
		{"grants", true, "the grant files load with no problem", ""},
		{"jobs", true, "the job files load with no problem", ""},
		{"secrets", true, h.cfg.Paths.Secrets + " does not exist: a grant naming a secret is denied", ""},
		{"taint floor", true, "level private", ""},
	}
	if len(rep.Checks) != len(want) {
		t.Fatalf("checks %+v", rep.Checks)
	}
	for i, w := range want {
		if got := rep.Checks[i]; got != (wire.HealthCheck{Name: w.name, OK: w.ok, Detail: w.detail, Runbook: w.anchor}) {
			t.Errorf("check %d: got %+v, want %+v", i, got, w)
		}
	}
	if records := h.records(); len(records) != 0 || rep.Head != nil {
		t.Fatalf("head %+v with %d records", rep.Head, len(records))
	}

	h.grant("zz.toml", "tool = \"shell\"\nmode = \"sometimes\"\n")
	h.secret("token", "x")
	if err := os.Chmod(h.cfg.Paths.Secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.call(readReq(t, "s-1", 1, "/data/auto/x")).(wire.DeniedResponse); !ok {
		t.Fatal("a call with an invalid grant set was not denied")
	}
	rep = report()
	grants, secrets := rep.Checks[1], rep.Checks[3]
	if grants.OK || grants.Runbook != "see docs/runbook.md#grants-invalid" || grants.Detail != "1 problem: zz.toml: max_taint: missing required field" {
		t.Errorf("grants %+v", grants)
	}
	if secrets.OK || secrets.Runbook != "see docs/runbook.md#secrets-dir-unsafe" || !strings.Contains(secrets.Detail, h.cfg.Paths.Secrets) {
		t.Errorf("secrets %+v", secrets)
	}
	if records := h.records(); len(records) == 0 || rep.Head == nil || rep.Head.Seq != records[len(records)-1].Seq {
		t.Fatalf("head %+v after the denial, last record %d", rep.Head, records[len(records)-1].Seq)
	}
}

// TestHealthGatewayd: with [sockets] gateway, the report says whether
// gatewayd took brokerd's start: not while nothing listens (the runbook's
// gatewayd-unreachable), and yes once a gatewayd has.
func TestHealthGatewayd(t *testing.T) {
	gatewayd := func(rep wire.HealthReport) wire.HealthCheck {
		t.Helper()
		for _, c := range rep.Checks {
			if c.Name == "gatewayd" {
				return c
			}
		}
		t.Fatalf("no gatewayd check in %+v", rep.Checks)
		return wire.HealthCheck{}
	}
	h := start(t, nil, withGatewayd(t, false, nil))
	eventually(t, "brokerd to find gatewayd unreachable", func() bool {
		return strings.Contains(h.stderr.String(), "see docs/runbook.md#gatewayd-unreachable")
	})
	if c := gatewayd(h.admin(wire.Health{}).(wire.HealthReport)); c.OK || c.Runbook != "see docs/runbook.md#gatewayd-unreachable" {
		t.Errorf("down: %+v", c)
	}
	var g *gatewaytest.Gatewayd
	h = start(t, nil, withGatewayd(t, true, &g))
	g.Wait(t, 0, "broker_start", isStart)
	eventually(t, "the report to say gatewayd took the start", func() bool {
		c := gatewayd(h.admin(wire.Health{}).(wire.HealthReport))
		return c.OK && strings.HasPrefix(c.Detail, "reached")
	})
}
