package serve

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"boxmaker/unixsock"
	"boxmaker/wire"
)

// TestPeersAreWired: with [peers] broker naming another user and admin a
// group this test's process (root) is not in, both sockets refuse it: it
// reads EOF, nothing is recorded, and brokerd logs each socket, the uid
// and the runbook entry. A refused peer takes no connection slot: more of
// them than the cap leave the cap free.
func TestPeersAreWired(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto}, func(o *Options) {
		o.Config.Peers.Broker = &unixsock.Rule{User: "nobody"}
		o.Config.Peers.Admin = &unixsock.Rule{Group: "nogroup"}
		o.Config.Sockets.MaxBrokerConnections = 1
	})
	for _, sock := range []string{h.cfg.Sockets.Broker, h.cfg.Sockets.Broker, h.cfg.Sockets.Admin} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		// A client that writes first may be cut while it writes; either
		// way it gets no answer.
		_ = wire.WriteEnvelope(c, wire.Request(1, readReq(t, "s-1", 1, "/data/auto/x")))
		b, _ := io.ReadAll(c)
		c.Close()
		if len(b) != 0 {
			t.Fatalf("%s: a refused peer read %q", sock, b)
		}
	}
	h.stop()
	if n := len(h.records()); n != 0 || h.rt.Count() != 0 {
		t.Errorf("%d records, %d runs for refused peers", n, h.rt.Count())
	}
	log := h.stderr.String()
	for sock, rule := range map[string]string{h.cfg.Sockets.Broker: "user nobody (uid 65534)", h.cfg.Sockets.Admin: "group nogroup (gid 65534)"} {
		want := "brokerd: " + sock + ": refused a connection from uid 0 "
		if !strings.Contains(log, want) || !strings.Contains(log, "lets only "+rule+" connect; see docs/runbook.md#peer-refused\n") {
			t.Errorf("log %q lacks the refusal %q by %s", log, want, rule)
		}
	}
	if strings.Contains(log, "socket-full") {
		t.Errorf("refused peers took connection slots: %q", log)
	}
}
