package bridge

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxmaker/internal/fakemm"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/wire"
)

// The bridge's tests run it in process against a real fakemm server and a
// real mm.Client, with its state file in a temporary directory, a fake
// loopd on loop.sock and a fake brokerd on gateway.sock. Events are given
// to Bridge.Event and Connected directly, so that a test can forge what no
// server would send: gatewayd's own checks must hold even then.

// brokerA and brokerB are two brokerd instance ids.
const (
	brokerA = "0123456789abcdef0123456789abcdef"
	brokerB = "fedcba9876543210fedcba9876543210"
)

// wait is how long a test waits for something that must happen; quiet is
// how long it waits to see that something does not.
const (
	wait  = 10 * time.Second
	quiet = 150 * time.Millisecond
)

// clock is the bridge's Now: the real time plus an offset a test moves.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// logs keeps the bridge's log lines.
type logs struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func newLogs() *logs { return &logs{changed: make(chan struct{})} }

func (l *logs) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	close(l.changed)
	l.changed = make(chan struct{})
}

// count is how many lines hold every one of subs.
func (l *logs) count(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if holds(s, subs) {
			n++
		}
	}
	return n
}

func holds(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// waitFor waits until n lines hold every one of subs, and returns the last.
func (l *logs) waitFor(t testing.TB, n int, subs ...string) string {
	t.Helper()
	deadline := time.After(wait)
	for {
		l.mu.Lock()
		got, last := 0, ""
		for _, s := range l.lines {
			if holds(s, subs) {
				got, last = got+1, s
			}
		}
		ch, lines := l.changed, strings.Join(l.lines, "\n")
		l.mu.Unlock()
		if got >= n {
			return last
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %d log line(s) with %q; the log:\n%s", n, subs, lines)
		}
	}
}

// world is one bridge and everything around it.
type world struct {
	t                          testing.TB
	mm                         *fakemm.Server
	bot, owner, owner2, strngr fakemm.User
	dm, dm2, strangerDM        string
	client                     *mm.Client
	dir                        string // short, for the sockets
	clock                      *clock
	logs                       *logs
	loop                       *fakeLoop
	opts                       func(*Options)
	stateName                  string // in dir

	st     *state.State
	b      *Bridge
	ctx    context.Context
	cancel context.CancelFunc
	served chan error
}

// newWorld starts fakemm, a fake loopd and a bridge serving gateway.sock;
// opts, if given, changes the bridge's Options before New.
func newWorld(t testing.TB, opts func(*Options)) *world {
	t.Helper()
	s, err := fakemm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	// Unix socket paths are short (108 bytes): t.TempDir's can be longer.
	dir, err := os.MkdirTemp("", "gwb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &world{t: t, mm: s, dir: dir, clock: &clock{}, logs: newLogs(), opts: opts, stateName: "state.json"}
	w.bot = s.AddUser("boxbot", true)
	w.owner = s.AddUser("kyle", false)
	w.owner2 = s.AddUser("robin", false)
	w.strngr = s.AddUser("mallory", false)
	w.dm = s.DirectChannel(w.bot.ID, w.owner.ID)
	w.dm2 = s.DirectChannel(w.bot.ID, w.owner2.ID)
	w.strangerDM = s.DirectChannel(w.bot.ID, w.strngr.ID)
	w.client, err = mm.New(s.URL(), w.bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	w.client.RequestTimeout = 5 * time.Second
	w.loop = startLoop(t, filepath.Join(dir, "loop.sock"))
	w.start()
	t.Cleanup(w.stop)
	return w
}

func (w *world) gatewayPath() string { return filepath.Join(w.dir, "gateway.sock") }

// options are the bridge's Options for this world.
func (w *world) options() Options {
	o := Options{MM: w.client, Bot: mm.User{ID: w.bot.ID, Username: w.bot.Username, IsBot: true},
		Owners: []Owner{{ID: w.owner.ID, Username: w.owner.Username, Channel: w.dm},
			{ID: w.owner2.ID, Username: w.owner2.Username, Channel: w.dm2}},
		LoopSocket: w.loop.path, Log: w.logs.add, Now: w.clock.Now, EditEvery: 50 * time.Millisecond}
	if w.opts != nil {
		w.opts(&o)
	}
	return o
}

// start opens the state file and starts a bridge over it, as gatewayd's
// serve does.
func (w *world) start() {
	t := w.t
	t.Helper()
	st, err := state.Open(filepath.Join(w.dir, w.stateName))
	if err != nil {
		t.Fatal(err)
	}
	o := w.options()
	o.State = st
	w.st = st
	w.b = New(o)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if err := w.b.Start(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.b.LoadApprovals()
	os.Remove(w.gatewayPath())
	ln, err := net.Listen("unix", w.gatewayPath())
	if err != nil {
		t.Fatal(err)
	}
	w.served = make(chan error, 1)
	b, ctx := w.b, w.ctx
	go func() { w.served <- b.ServeGateway(ctx, ln) }()
}

// stop ends the bridge and checks that every goroutine it started ends.
func (w *world) stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.cancel = nil
	select {
	case err := <-w.served:
		if err != nil {
			w.t.Errorf("ServeGateway: %v", err)
		}
	case <-time.After(wait):
		w.t.Errorf("ServeGateway did not return after its context ended")
	}
	done := make(chan struct{})
	go func() { w.b.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		w.t.Errorf("Bridge.Wait did not return after the context ended")
	}
}

// restart is gatewayd stopped and started again: the in-memory table is
// lost, the state file is read again.
func (w *world) restart() {
	w.t.Helper()
	w.stop()
	w.start()
}

// event gives the bridge one event, as the WebSocket would.
func (w *world) event(ev mm.Event) { w.b.Event(w.ctx, ev) }

// posted gives the bridge a post the fake server holds, as a posted event.
func (w *world) posted(p fakemm.Post) { w.event(mm.Posted{Post: mmPost(p)}) }

// react adds a real reaction on the server and gives the bridge its event.
func (w *world) react(user, post, emoji string) {
	at := w.mm.React(user, post, emoji)
	w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: user, PostID: post, EmojiName: emoji, CreateAt: at.UnixMilli()}})
}

// say posts an owner's message on the server and gives the bridge its event.
func (w *world) say(user, channel, root, text string) fakemm.Post {
	p := w.mm.Post(user, channel, root, text)
	w.posted(p)
	return p
}

func mmPost(p fakemm.Post) mm.Post {
	return mm.Post{ID: p.ID, ChannelID: p.ChannelID, RootID: p.RootID, UserID: p.UserID, Message: p.Message,
		Type: p.Type, CreateAt: p.CreateAt, UpdateAt: p.UpdateAt, EditAt: p.EditAt, DeleteAt: p.DeleteAt, FromBot: p.FromBot}
}

// newID is a Mattermost-shaped id for a forged post.
func newID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 26)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func (w *world) now() int64 { return w.clock.Now().UnixMilli() }

// waitPost waits for a post on the fake server that satisfies f.
func (w *world) waitPost(what string, f func(fakemm.Post) bool) fakemm.Post {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := w.mm.WaitFor(ctx, f)
	if err != nil {
		w.t.Fatalf("no post %s: %v", what, err)
	}
	return p
}

// botPosts are the posts of the bot in channel.
func (w *world) botPosts(channel string) []fakemm.Post {
	var out []fakemm.Post
	for _, p := range w.mm.Posts(channel) {
		if p.UserID == w.bot.ID {
			out = append(out, p)
		}
	}
	return out
}

// request is an approval request of brokerA that expires in 15 minutes.
func (w *world) request(id uint64) wire.ApprovalRequest {
	sess, _ := wire.NewSessionID("chat-1")
	now := w.clock.Now()
	r := wire.ApprovalRequest{Broker: brokerA, Approval: id, Session: sess, Call: 3, Tool: "shell",
		Arguments: `{"command":"ls"}`, Grant: "shell-scratch", Taint: wire.Private,
		Created: wire.TimestampOf(now), Expires: wire.TimestampOf(now.Add(15 * time.Minute)),
		Head: wire.AuditHead{Seq: 41, Hash: wire.Sha256([]byte("record 41"))}}
	r.Digest = wire.CallDigest(r.Tool, r.Arguments, r.Grant, r.Taint)
	return r
}

// send opens a connection to gateway.sock, as brokerd does, and sends m.
func (w *world) send(m wire.Message) net.Conn {
	w.t.Helper()
	c, err := net.Dial("unix", w.gatewayPath())
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	// EPIPE: gatewayd refused the connection (over MaxConnections) and
	// closed it before the request was written; its error frame is still
	// there to read, which is what such a test looks at.
	if err := wire.WriteEnvelope(c, wire.Request(1, m)); err != nil && !errors.Is(err, syscall.EPIPE) {
		w.t.Fatal(err)
	}
	return c
}

// read reads one frame within d.
func read(c net.Conn, d time.Duration) (wire.Envelope, error) {
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	return wire.ReadEnvelope(c)
}

// call sends m on a connection of its own and returns the final answer.
func (w *world) call(m wire.Message) wire.Message {
	w.t.Helper()
	c := w.send(m)
	defer c.Close()
	env, err := read(c, wait)
	if err != nil {
		w.t.Fatalf("%s: %v", m.Kind(), err)
	}
	if !env.Final || env.ID != 1 {
		w.t.Fatalf("%s: answered with id %d, final %t", m.Kind(), env.ID, env.Final)
	}
	return env.Msg
}

// ask sends an approval request and returns its connection and post.
func (w *world) ask(req wire.ApprovalRequest) (net.Conn, string) {
	w.t.Helper()
	c := w.send(req)
	env, err := read(c, wait)
	if err != nil {
		w.t.Fatalf("approval %d: %v", req.Approval, err)
	}
	p, ok := env.Msg.(wire.ApprovalPosted)
	if !ok || env.Final || env.ID != 1 {
		w.t.Fatalf("approval %d: answered %#v (final %t), not approval_posted", req.Approval, env.Msg, env.Final)
	}
	return c, p.Post
}

// answer reads the owner's answer on an approval's connection.
func answer(t testing.TB, c net.Conn) wire.OwnerAnswer {
	t.Helper()
	env, err := read(c, wait)
	if err != nil {
		t.Fatalf("no owner_answer: %v", err)
	}
	a, ok := env.Msg.(wire.OwnerAnswer)
	if !ok || !env.Final || env.ID != 1 {
		t.Fatalf("answered %#v (final %t), not a final owner_answer", env.Msg, env.Final)
	}
	return a
}

// noAnswer checks that nothing comes on an approval's connection for a
// while.
func noAnswer(t testing.TB, c net.Conn) {
	t.Helper()
	env, err := read(c, quiet)
	var ne net.Error
	if err == nil {
		t.Fatalf("brokerd was sent %s %+v; want nothing", env.Msg.Kind(), env.Msg)
	}
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("the connection ended (%v); want it open and silent", err)
	}
}
