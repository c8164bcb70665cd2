package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
)

// TestPeersAreWired: with [peers] socket, gateway and jobs naming another
// user and a group this test's process (root) is not in, each of loopd's
// sockets refuses it: it reads EOF, and loopd logs each socket, the uid and
// the runbook entry.
func TestPeersAreWired(t *testing.T) {
	cfg, _ := setup(t, `gateway = "[[dir]]/gw/loop.sock"`, `jobs = "[[dir]]/jobs/loop.sock"`, "[peers]", `socket = { user = "nobody" }`,
		`gateway = { group = "nogroup" }`, `jobs = { user = "nobody" }`)
	startFake(t, cfg.Model.Socket, fakellama.Options{NCtx: 8192})
	var stderr syncbuf.Buffer
	stop := serving(t, cfg, &stderr)
	for _, sock := range []string{cfg.Listen.Socket, cfg.Listen.Gateway, cfg.Listen.Jobs} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || len(b) != 0 {
			t.Fatalf("%s: a refused peer read %q, %v; want EOF", sock, b, err)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	log := stderr.String()
	for sock, rule := range map[string]string{cfg.Listen.Socket: "user nobody (uid 65534)", cfg.Listen.Gateway: "group nogroup (gid 65534)",
		cfg.Listen.Jobs: "user nobody (uid 65534)"} {
		want := "loopd: " + sock + ": refused a connection from uid 0 "
		if !strings.Contains(log, want) || !strings.Contains(log, "lets only "+rule+" connect; see docs/runbook.md#peer-refused\n") {
			t.Errorf("log %q lacks the refusal %q by %s", log, want, rule)
		}
	}
}
