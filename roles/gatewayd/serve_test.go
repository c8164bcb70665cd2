package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/internal/syncbuf"
	"boxmaker/wire"
)

// TestPeersGatewayIsWired: with [peers] gateway naming another user, this
// test's process (root) is refused on gateway.sock: it reads EOF, the
// job_result it sent is not posted, and gatewayd logs the socket, the uid
// and the runbook entry.
func TestPeersGatewayIsWired(t *testing.T) {
	mm, err := fakemm.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer mm.Close()
	owner, bot := mm.AddUser("owner", false), mm.AddUser("boxbot", true)
	dir, err := os.MkdirTemp("", "bxg") // short: socket paths are at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(bot.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "gateway.sock")
	cfg := filepath.Join(dir, "gatewayd.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `[mattermost]
url = %q
token_file = %q
owners = [%q]
[sockets]
gateway = %q
loop = %q
[paths]
home = %q
[peers]
gateway = { user = "nobody" }
`, mm.URL(), token, owner.ID, sock, filepath.Join(dir, "loop", "loop.sock"), dir), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, &stderr) }()
	var c net.Conn
	for deadline := time.Now().Add(20 * time.Second); c == nil; {
		select {
		case err := <-done:
			t.Fatalf("Serve ended: %v\n%s", err, stderr.String())
		default:
		}
		if c, err = net.Dial("unix", sock); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("gateway.sock never answered: %v\n%s", err, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	defer c.Close()
	// What a refused peer sends is never read: here a job_result, which
	// would be posted in the owner's channel (the write itself may fail,
	// the connection being closed already).
	sess, _ := wire.NewSessionID("job-digest-1")
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_ = wire.WriteEnvelope(c, wire.Request(1, wire.JobResult{Job: "digest", Session: sess, Status: wire.JobOK, Content: "posted by a stranger"}))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) || len(b) != 0 {
		t.Fatalf("a refused peer read %q, %v; want EOF", b, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	want := "gatewayd: " + sock + ": refused a connection from uid 0 "
	if log := stderr.String(); !strings.Contains(log, want) || !strings.Contains(log, "lets only user nobody (uid 65534) connect; see docs/runbook.md#peer-refused\n") {
		t.Fatalf("log %q lacks the refusal %q", log, want)
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Fatal("gateway.sock is left behind")
	}
	if posts := mm.Posts(mm.DirectChannel(bot.ID, owner.ID)); len(posts) != 0 {
		t.Fatalf("the refused peer's job_result was posted: %+v", posts)
	}
}
