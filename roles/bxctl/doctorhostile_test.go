package bxctl

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// TestDoctorHostileRole: what a compromised brokerd sends is data. A check
// name with terminal escapes, a runbook line that is not one, and a head of
// null over a log that holds records: the escapes never reach the terminal,
// the name is replaced, the line is doctor's own, and the chain check
// fails instead of saying the log is empty.
func TestDoctorHostileRole(t *testing.T) {
	home, _ := doctorHome(t)
	startFake(t, filepath.Join(home, "run", "owner-broker", "admin.sock"), always(wire.HealthReport{
		Checks: []wire.HealthCheck{{Name: "x\x1b[2K\rok: all\n\x1b]0;pwn\x07", OK: false, Detail: "d\x1b[31m", Runbook: "a\x1b[31mRED"},
			{Name: "grants", OK: false, Detail: "bad", Runbook: "see docs/runbook.md#grants-invalid\x1b[2K"}}}))
	startFake(t, filepath.Join(home, "run", "owner-loop", "loop.sock"), always(wire.HealthReport{}))
	code, out, _ := runDoctor(t, home, 1000, allActive())
	if strings.ContainsAny(out, "\x1b\x07\r") {
		t.Errorf("a control character reached the terminal: %q", out)
	}
	for _, line := range []string{
		`FAIL: brokerd report: brokerd sent a check named "x\u001b[2K\u000dok: all\u000a\u001b]0;pwn\u0007", not plain words; its detail: d\u001b[31m; see docs/runbook.md#admin-unavailable` + "\n",
		"FAIL: brokerd grants: bad; see docs/runbook.md#admin-unavailable\n",
		"FAIL: audit chain: brokerd reports no head, but the log holds 3 records; see docs/runbook.md#audit-head-mismatch\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in\n%s", line, out)
		}
	}
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
}

// TestDoctorRootSocketTricks: as root, a socket named with escapes that
// lets root in and writes to it fails and is printed as data; a file named
// *.sock that is not a socket, and a socket whose file is another user's
// than its listener's, fail too.
func TestDoctorRootSocketTricks(t *testing.T) {
	home, _ := doctorHome(t)
	dir := filepath.Join(home, "run", "tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	talker := filepath.Join(dir, "e\x1b[2K\x1b[1A.sock")
	serveUnix(t, talker, func(c net.Conn) {
		c.Write([]byte("X"))
		c.Close()
	})
	if err := os.WriteFile(filepath.Join(dir, "plain.sock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "planted.sock")
	serveUnix(t, planted, func(c net.Conn) { c.Close() })
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runDoctor(t, home, 0, allActive())
	if strings.ContainsAny(out, "\x1b") {
		t.Errorf("a control character reached the terminal: %q", out)
	}
	for _, line := range []string{
		`FAIL: socket ` + dir + `/e\u001b[2K\u001b[1A.sock: let root in and wrote to it (listened on by root): its [peers] rule admits a user it should not; see docs/runbook.md#peer-refused` + "\n",
		"FAIL: socket " + dir + "/plain.sock: is not a socket (----------); see docs/runbook.md#socket-unavailable\n",
		"FAIL: socket " + planted + ": listened on by root, but the file is " + userOf(65534) + "'s; see docs/runbook.md#socket-unavailable\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in\n%s", line, out)
		}
	}
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
}
