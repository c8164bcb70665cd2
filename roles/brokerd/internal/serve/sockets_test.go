package serve

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/unixsock"
	"boxmaker/wire"
)

// TestAdminKindsForbiddenOnBrokerSock: loopd cannot approve its own calls.
func TestAdminKindsForbiddenOnBrokerSock(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAsk})
	for _, msg := range []wire.Message{wire.Approvals{}, wire.Approve{Approval: 0}, wire.Refuse{Approval: 0, Reason: ptr("x")}, wire.CheckGrants{}} {
		got := h.call2(h.cfg.Sockets.Broker, msg)
		if e, ok := got.(wire.WireError); !ok || e.Code != wire.Forbidden {
			t.Errorf("%s on broker.sock: got %+v, want error forbidden", msg.Kind(), got)
		}
		want := "brokerd: refused a " + msg.Kind() + " message on broker.sock, which accepts only tool_request\nsee docs/runbook.md#socket-forbidden\n"
		if !strings.Contains(h.stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", h.stderr.String(), want)
		}
	}
	if n := len(h.records()); n != 0 {
		t.Errorf("%d audit records for forbidden requests", n)
	}
}

func TestToolRequestForbiddenOnAdminSock(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto})
	got := h.call2(h.cfg.Sockets.Admin, readReq(t, "s-1", 1, "/data/auto/x"))
	if e, ok := got.(wire.WireError); !ok || e.Code != wire.Forbidden {
		t.Fatalf("got %+v, want error forbidden", got)
	}
	if !strings.Contains(h.stderr.String(), "refused a tool_request message on admin.sock, which accepts only approvals, approve, refuse, check_grants, health, and the notes and jobs requests\nsee docs/runbook.md#socket-forbidden\n") {
		t.Errorf("stderr %q", h.stderr.String())
	}
	// Nor may a response kind arrive on either socket.
	got = h.call2(h.cfg.Sockets.Broker, wire.OK{})
	if e, ok := got.(wire.WireError); !ok || e.Code != wire.Forbidden {
		t.Fatalf("ok on broker.sock: got %+v", got)
	}
	if n := len(h.records()); n != 0 || h.rt.Count() != 0 {
		t.Errorf("%d records, %d runs", n, h.rt.Count())
	}
}

// call2 sends msg on sock and returns the final answer, and checks that the
// connection is closed after it.
func (h *harness) call2(sock string, msg wire.Message) wire.Message {
	h.t.Helper()
	c := h.send(sock, msg)
	env := c.next(h.t)
	if _, err := c.r.ReadByte(); err == nil {
		h.t.Errorf("the connection stayed open after %s", env.Msg.Kind())
	}
	return env.Msg
}

func TestSocketModes(t *testing.T) {
	h := start(t, nil)
	for _, path := range []string{h.cfg.Sockets.Broker, h.cfg.Sockets.Admin} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a socket with 0600", path, fi.Mode())
		}
		di, err := os.Stat(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if di.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", filepath.Dir(path), di.Mode())
		}
	}
	if !strings.HasSuffix(h.cfg.Sockets.Broker, "/run/loop-broker/broker.sock") || !strings.HasSuffix(h.cfg.Sockets.Admin, "/run/owner-broker/admin.sock") {
		t.Errorf("sockets %+v", h.cfg.Sockets)
	}
}

// TestStaleSocketIsRemoved: a socket file left by a crash is replaced; one
// that something answers on, or a file that is not a socket, is not.
func TestStaleSocketIsRemoved(t *testing.T) {
	dir, err := os.MkdirTemp("", "bk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run", "s.sock")
	os.MkdirAll(filepath.Dir(path), 0o700)
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unixsock.Listen(path, nil, nil); err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("listen over a live socket: %v", err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	ln, err := unixsock.Listen(path, nil, nil)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	ln.Close()
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := unixsock.Listen(path, nil, nil); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("listen over a file: %v", err)
	}
}
