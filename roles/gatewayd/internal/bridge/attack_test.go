package bridge

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/wire"
)

// gatedMM holds Reactions calls while a gate is set, so that a test can act
// between what gatewayd does before and after one.
type gatedMM struct {
	Mattermost
	mu      sync.Mutex
	gate    chan struct{}
	entered chan string
}

func (g *gatedMM) hold(gate chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = gate
}

func (g *gatedMM) Reactions(ctx context.Context, post string) ([]mm.Reaction, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.entered <- post
		<-gate
	}
	return g.Mattermost.Reactions(ctx, post)
}

// TestHeldAnswerSurvivesAFailedWrite: brokerd asks again, an owner answers
// while gatewayd still reads the post's reactions, and brokerd's connection
// is gone when gatewayd writes the answer: the answer stays held, and
// brokerd's next request gets it. (It was lost: marked sent before the
// write, and never unmarked when the write failed.)
func TestHeldAnswerSurvivesAFailedWrite(t *testing.T) {
	var g *gatedMM
	w := newWorld(t, func(o *Options) {
		g = &gatedMM{Mattermost: o.MM, entered: make(chan string, 1)}
		o.MM = g
	})
	req := w.request(50)
	c1, ap := w.ask(req)
	c1.Close()
	gate := make(chan struct{})
	g.hold(gate)
	c2 := w.send(req)
	if env, err := read(c2, wait); err != nil || env.Msg != (wire.ApprovalPosted{Post: ap}) {
		t.Fatalf("asked again: %#v, %v", env.Msg, err)
	}
	<-g.entered // between approval_posted and taking the answer
	c2.Close()
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: ap, EmojiName: "+1", CreateAt: w.now()}})
	w.logs.waitFor(t, 1, "approval 50: approved by kyle")
	g.hold(nil)
	close(gate)
	w.logs.waitFor(t, 1, "approval 50: the answer could not be passed to brokerd")
	c3, post := w.ask(req)
	if post != ap {
		t.Fatalf("post %s, want %s", post, ap)
	}
	if a := answer(t, c3); a.Answer != wire.Approved || a.Post != ap || a.By != w.owner.ID {
		t.Fatalf("answer %+v", a)
	}
}

// flakyListener fails its first Accept as a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	failed atomic.Bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed.Swap(true) {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestGatewayOutOfDescriptors: an accept that fails (too many open files,
// which a brokerd holding thousands of approval connections can cause)
// does not stop gateway.sock; it serves again once descriptors are free.
// (ServeGateway returned, and gatewayd went on running without it.)
func TestGatewayOutOfDescriptors(t *testing.T) {
	w := newWorld(t, nil)
	path := filepath.Join(w.dir, "flaky.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- w.b.ServeGateway(ctx, &flakyListener{Listener: ln}) }()
	defer cancel()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wire.WriteEnvelope(c, wire.Request(1, wire.AuditHead{Seq: 1, Hash: wire.Sha256(nil)}))
	env, err := read(c, wait)
	if err != nil || env.Msg != (wire.OK{}) {
		select {
		case err := <-served:
			t.Fatalf("ServeGateway returned (%v) on a failed accept", err)
		default:
		}
		t.Fatalf("audit_head: %#v, %v", env.Msg, err)
	}
	w.logs.waitFor(t, 1, "gateway.sock", "too many open files")
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("ServeGateway: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("ServeGateway did not return after its context ended")
	}
}

// TestGatewayConnectionsBounded: a brokerd (or a process of its user) that
// opens connection after connection gets an error once gatewayd holds
// MaxConnections, and is served again once one closes. (Each connection
// was served, each an approval's post and goroutines, without end.)
func TestGatewayConnectionsBounded(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.MaxConnections = 2 })
	c1, _ := w.ask(w.request(80))
	idle, err := net.Dial("unix", w.gatewayPath())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	posts := len(w.mm.Posts(w.dm))
	c3 := w.send(w.request(81))
	env, err := read(c3, wait)
	if err != nil || !isError(env.Msg, wire.Internal) || !env.Final {
		t.Fatalf("a third connection: %#v, %v; want error internal", env.Msg, err)
	}
	if n := len(w.mm.Posts(w.dm)); n != posts {
		t.Fatalf("%d posts, then %d: the refused request was posted", posts, n)
	}
	w.logs.waitFor(t, 1, "gateway.sock", "2 connections")
	idle.Close()
	deadline := time.Now().Add(wait)
	for {
		c := w.send(wire.AuditHead{Seq: 2, Hash: wire.Sha256(nil)})
		env, err := read(c, wait)
		c.Close()
		if err == nil && env.Msg == (wire.OK{}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one closed: %#v, %v", env.Msg, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.react(w.owner.ID, w.botPosts(w.dm)[0].ID, "+1")
	if a := answer(t, c1); a.Answer != wire.Approved {
		t.Fatalf("answer %+v", a)
	}
}
