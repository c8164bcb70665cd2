package mm

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/internal/fakemm"

	"github.com/coder/websocket"
)

// world is a fake Mattermost server with an owner, the bot, a stranger,
// the bot's direct channel with the owner, and a client for the bot.
type world struct {
	s                    *fakemm.Server
	owner, bot, stranger fakemm.User
	dm                   string
	c                    *Client
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s, err := fakemm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := &world{s: s, owner: s.AddUser("owner", false), bot: s.AddUser("boxbot", true), stranger: s.AddUser("mallory", false)}
	w.dm = s.DirectChannel(w.bot.ID, w.owner.ID)
	w.c = w.client(t, w.bot.Token)
	return w
}

func (w *world) client(t *testing.T, token string) *Client {
	t.Helper()
	c, err := New(w.s.URL(), token)
	if err != nil {
		t.Fatal(err)
	}
	c.RequestTimeout = 5 * time.Second
	c.Backoff = Backoff{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}
	return c
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recorder is a Handler that logs what it is told, in order.
type recorder struct {
	mu   sync.Mutex
	log  []string
	errs []error
	// onConnected, when set, runs inside Connected.
	onConnected func(ctx context.Context)
	changed     chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) add(s string, err error) {
	r.mu.Lock()
	r.log = append(r.log, s)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) Connected(ctx context.Context) {
	if r.onConnected != nil {
		r.onConnected(ctx)
	}
	r.add("connected", nil)
}

func (r *recorder) Event(_ context.Context, ev Event) { r.add(describe(ev), nil) }

func (r *recorder) Disconnected(err error) { r.add("disconnected", err) }

// describe names an event for the log.
func describe(ev Event) string {
	switch e := ev.(type) {
	case Hello:
		return "hello"
	case Posted:
		return fmt.Sprintf("posted %s %s %q bot=%v", e.ChannelType, e.Post.UserID, e.Post.Message, e.Post.FromBot)
	case PostEdited:
		return fmt.Sprintf("edited %s %q", e.Post.ID, e.Post.Message)
	case ReactionAdded:
		return fmt.Sprintf("reacted %s %s %s", e.Reaction.UserID, e.Reaction.PostID, e.Reaction.EmojiName)
	case ReactionRemoved:
		return fmt.Sprintf("unreacted %s %s %s", e.Reaction.UserID, e.Reaction.PostID, e.Reaction.EmojiName)
	case Other:
		return "other " + e.Name
	}
	return fmt.Sprintf("%T", ev)
}

func (r *recorder) snapshot() ([]string, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...), append([]error(nil), r.errs...)
}

// waitFor waits until the log has n entries equal to line.
func (r *recorder) waitFor(t *testing.T, line string, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		log, _ := r.snapshot()
		got := 0
		for _, l := range log {
			if l == line {
				got++
			}
		}
		if got >= n {
			return log
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("waited 10 s for %d × %q; log:\n%s", n, line, strings.Join(log, "\n"))
		}
	}
}

// listen runs c.Listen(h) until the test ends, and checks that it returns
// the context's error.
func listen(t *testing.T, c *Client, h Handler) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Listen(ctx, h) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != context.Canceled {
				t.Errorf("Listen returned %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Listen did not return within 10 s of its context's end")
		}
	}
	t.Cleanup(stop)
	return cancel
}

// stubWS serves a WebSocket at /api/v4/websocket that reads the
// authentication_challenge and then runs script; the script's context ends
// with the test.
func stubWS(t *testing.T, script func(ctx context.Context, c *websocket.Conn)) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.CloseNow()
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		script(ctx, c)
	}))
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		wg.Wait()
	})
	return srv
}

// send writes a frame, ignoring errors (the client may be gone).
func send(ctx context.Context, c *websocket.Conn, frame string) {
	c.Write(ctx, websocket.MessageText, []byte(frame))
}
