package bxctl

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/unixsock"
	"boxmaker/wire"
)

// doctorHome is a short temporary BOXMAKER_HOME (socket paths are at most
// 107 bytes) with a log of three records, and brokerd's head.
func doctorHome(t *testing.T) (string, wire.AuditHead) {
	t.Helper()
	home, err := os.MkdirTemp("", "doc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	entries := writeLog(t, home, 1, 2, 3)
	last := entries[len(entries)-1]
	for _, d := range []string{"owner-broker", "owner-loop"} {
		if err := os.MkdirAll(filepath.Join(home, "run", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return home, wire.AuditHead{Seq: last.Seq, Hash: last.Hash}
}

// runDoctor runs bxctl doctor with systemd's answers from states (unit to
// is-active's word; is-enabled answers "disabled") and euid.
func runDoctor(t *testing.T, home string, euid int, states map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	e := &env{name: "bxctl", stdin: strings.NewReader(""), stdout: &out, stderr: &errs, now: time.Now,
		euid: func() int { return euid },
		command: func(args ...string) (string, error) {
			if args[0] == "is-enabled" {
				return "disabled", nil
			}
			return states[args[1]], nil
		}}
	code := runCLI(&cli{}, append([]string{"doctor", "--home", home}, args...), e)
	return code, out.String(), errs.String()
}

func allActive() map[string]string {
	m := map[string]string{}
	for _, r := range doctorUnits {
		m["boxmaker-"+r+".service"] = "active"
	}
	m["boxmaker-gatewayd.service"] = "inactive"
	return m
}

// TestDoctorAllOK: as an owner, every unit active (gatewayd not enabled,
// so brokerd not reaching it is no failure), brokerd's and loopd's checks
// as they report them, and the audit chain verified against the head
// brokerd names.
func TestDoctorAllOK(t *testing.T) {
	home, head := doctorHome(t)
	broker := startFake(t, filepath.Join(home, "run", "owner-broker", "admin.sock"), always(wire.HealthReport{
		Checks: []wire.HealthCheck{{Name: "grants", OK: true, Detail: "the grant files load with no problem"},
			{Name: "gatewayd", OK: false, Detail: "the last try to reach it failed", Runbook: "see docs/runbook.md#gatewayd-unreachable"}}, Head: &head}))
	startFake(t, filepath.Join(home, "run", "owner-loop", "loop.sock"), always(wire.HealthReport{
		Checks: []wire.HealthCheck{{Name: "model", OK: true, Detail: "answers; n_ctx 4096"}}}))
	code, out, errs := runDoctor(t, home, 1000, allActive())
	want := `ok: unit boxmaker-tools.service: active
ok: unit boxmaker-inferproxy.service: active
ok: unit boxmaker-brokerd.service: active
ok: unit boxmaker-loopd.service: active
ok: unit boxmaker-gatewayd.service: not enabled: Mattermost is not set up (deploy apply --start starts it once it is)
ok: brokerd grants: the grant files load with no problem
ok: brokerd gatewayd: not reached, and not enabled: approvals are answered with bxctl approve and bxctl refuse
ok: audit chain: 3 records, head ` + head.Hash.String() + `; it holds record 2, the head brokerd reports
ok: loopd model: answers; n_ctx 4096
doctor: all 9 checks ok
`
	if code != 0 || out != want || errs != "" {
		t.Fatalf("exit %d\n%s\nwant\n%s\nstderr %q", code, out, want, errs)
	}
	if reqs := broker.requests(); len(reqs) != 1 || reqs[0] != (wire.Health{}) {
		t.Fatalf("brokerd was sent %#v", reqs)
	}
}

// TestDoctorFailures: a failed unit, a check a role fails (its detail
// already ending in the runbook line, which is not said twice), a head
// the log does not hold, and loopd not answering each fail with their
// runbook lines; the exit status is 1, and --json says the same.
func TestDoctorFailures(t *testing.T) {
	home, head := doctorHome(t)
	forged := wire.AuditHead{Seq: head.Seq, Hash: wire.Sha256([]byte("another log"))}
	startFake(t, filepath.Join(home, "run", "owner-broker", "admin.sock"), always(wire.HealthReport{
		Checks: []wire.HealthCheck{{Name: "secrets", OK: false, Detail: "too open; see docs/runbook.md#secrets-dir-unsafe", Runbook: "see docs/runbook.md#secrets-dir-unsafe"}},
		Head:   &forged}))
	states := allActive()
	states["boxmaker-brokerd.service"] = "failed"
	code, out, _ := runDoctor(t, home, 1000, states)
	for _, line := range []string{
		"FAIL: unit boxmaker-brokerd.service: failed (journalctl -u boxmaker-brokerd.service says why); see docs/runbook.md#deploy-start-failed\n",
		"FAIL: brokerd secrets: too open; see docs/runbook.md#secrets-dir-unsafe\n",
		"FAIL: loopd: " + filepath.Join(home, "run", "owner-loop", "loop.sock") + ": dial unix ",
		"doctor: 4 of 8 checks failed\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in\n%s", line, out)
		}
	}
	if !strings.Contains(out, "FAIL: audit chain: the head brokerd reports: ") || !strings.Contains(out, "see docs/runbook.md#audit-head-mismatch\n") {
		t.Errorf("the forged head passed:\n%s", out)
	}
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	code, js, _ := runDoctor(t, home, 1000, states, "--json")
	var rep struct {
		OK     bool
		Checks []wire.HealthCheck
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil || code != 1 || rep.OK || len(rep.Checks) != 8 ||
		rep.Checks[2] != (wire.HealthCheck{Name: "unit boxmaker-brokerd.service", OK: false,
			Detail: "failed (journalctl -u boxmaker-brokerd.service says why)", Runbook: "see docs/runbook.md#deploy-start-failed"}) {
		t.Fatalf("exit %d, %v: %s", code, err, js)
	}
}

// TestDoctorAsRoot: root dials every socket under run/: one whose [peers]
// rule refuses root passes, one that lets root in fails, and brokerd's
// admin.sock closing root's connection is said, not failed (root is no
// owner); the audit chain is then held to brokerd's head file, as
// brokerd's start holds it.
func TestDoctorAsRoot(t *testing.T) {
	home, _ := doctorHome(t)
	refusing := func(path string) {
		ln, err := unixsock.Listen(path, &unixsock.Rule{User: "nobody"}, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: the peer rule must refuse uid 0, and the socket's own checks run as root")
	}
	admin := filepath.Join(home, "run", "owner-broker", "admin.sock")
	refusing(admin)
	loop := filepath.Join(home, "run", "owner-loop", "loop.sock")
	refusing(loop)
	open := filepath.Join(home, "run", "gateway-loop", "loop.sock")
	if err := os.Mkdir(filepath.Dir(open), 0o755); err != nil {
		t.Fatal(err)
	}
	serveUnix(t, open, nil) // holds each connection open: this one lets root in
	code, out, _ := runDoctor(t, home, 0, allActive())
	for _, line := range []string{
		"ok: socket " + admin + ": answers as root, and its [peers] rule refuses root\n",
		"FAIL: socket " + open + ": let root in (listened on by root): its [peers] rule admits a user it should not; see docs/runbook.md#peer-refused\n",
		"ok: brokerd: skipped: " + admin + " closes root's connection (not its peer); run bxctl doctor as an owner for brokerd's own checks\n",
		"ok: loopd: skipped: " + loop + " closes root's connection (not its peer); run bxctl doctor as an owner for loopd's own checks\n",
		"ok: audit chain: 3 records, head ",
		"doctor: 1 of 11 checks failed\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in\n%s", line, out)
		}
	}
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
}

// serveUnix listens at path until the test ends, handing each connection
// to handle, which closes it; with handle nil each is held open until then.
func serveUnix(t *testing.T, path string, handle func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if handle == nil {
				held = append(held, c)
				continue
			}
			handle(c)
		}
	}()
}
