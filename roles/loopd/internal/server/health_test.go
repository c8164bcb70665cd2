package server

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
	"boxmaker/wire"
)

// TestHealth is bxctl doctor's view of loopd (issue 27): the model through
// infer.sock with what loopd learnt at start, the special tokens, and the
// core memory, each read again at every request: a core memory gone and a
// model server stopped fail with their runbook lines. gatewayd's and
// brokerd's sockets refuse the request.
func TestHealth(t *testing.T) {
	cfg, _ := setup(t, `gateway = "[[dir]]/gw/loop.sock"`, `jobs = "[[dir]]/jobs/loop.sock"`)
	fake := startFake(t, cfg.Model.Socket, fakellama.Options{NCtx: 8192})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	var stderr syncbuf.Buffer
	go func() { done <- Run(ctx, Options{Config: cfg, Stderr: &stderr, Ready: func() { close(ready) }}) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve ended: %v\n%s", err, stderr.String())
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	send := func(sock string) wire.Envelope {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if err := wire.WriteEnvelope(c, wire.Request(1, wire.Health{})); err != nil {
			t.Fatal(err)
		}
		e, err := wire.ReadEnvelope(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wire.ReadEnvelope(c); err != io.EOF {
			t.Fatalf("after the answer: %v", err)
		}
		return e
	}
	for _, sock := range []string{cfg.Listen.Gateway, cfg.Listen.Jobs} {
		if e := send(sock); e.Msg != (wire.WireError{Code: wire.Forbidden, Detail: "loop.sock accepts only say, not health"}) {
			t.Errorf("%s answered %#v", sock, e.Msg)
		}
	}
	ask := func() []wire.HealthCheck {
		t.Helper()
		e := send(cfg.Listen.Socket)
		rep, ok := e.Msg.(wire.HealthReport)
		if !ok || !e.Final || rep.Head != nil || len(rep.Checks) != 3 {
			t.Fatalf("answer %#v", e)
		}
		return rep.Checks
	}
	checks := ask()
	want := []wire.HealthCheck{
		{Name: "model", OK: true, Detail: "answers through " + cfg.Model.Socket + "; learnt at start: n_ctx 8192, server slots 1"},
		{Name: "core memory", OK: true, Detail: "readable"},
	}
	if checks[0] != want[0] || checks[2] != want[1] {
		t.Fatalf("checks %+v", checks)
	}
	if sp := checks[1]; sp.Name != "special tokens" || !sp.OK || !strings.Contains(sp.Detail, "tokens are neutralised in untrusted text") {
		t.Fatalf("special tokens %+v", sp)
	}

	os.Remove(filepath.Join(cfg.Paths.Home, "memory", "core.md"))
	fake.Close()
	checks = ask()
	if m := checks[0]; m.OK || m.Runbook != "see docs/runbook.md#model-server-unreachable" || !strings.HasPrefix(m.Detail, "the model does not answer /health through "+cfg.Model.Socket) {
		t.Errorf("model %+v", m)
	}
	if c := checks[2]; c.OK || c.Runbook != "see docs/runbook.md#core-memory-unreadable" {
		t.Errorf("core memory %+v", c)
	}
}
