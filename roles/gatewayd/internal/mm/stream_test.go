package mm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestListenEvents(t *testing.T) {
	w := newWorld(t)
	r := newRecorder()
	listen(t, w.c, r)
	r.waitFor(t, "connected", 1)
	if err := w.s.WaitSockets(ctxT(t), w.bot.ID, 1); err != nil {
		t.Fatal(err)
	}
	// A stranger's DM with the owner is not the bot's: no event.
	w.s.Post(w.stranger.ID, w.s.DirectChannel(w.stranger.ID, w.owner.ID), "", "not for the bot")
	p := w.s.Post(w.owner.ID, w.dm, "", `say "hi" <now>`)
	if _, err := w.c.CreatePost(ctxT(t), w.dm, p.ID, "the bot's own reply"); err != nil {
		t.Fatal(err)
	}
	w.s.Edit(w.owner.ID, p.ID, "approve")
	w.s.React(w.owner.ID, p.ID, "white_check_mark")
	w.s.Unreact(w.owner.ID, p.ID, "white_check_mark")
	last := fmt.Sprintf("unreacted %s %s white_check_mark", w.owner.ID, p.ID)
	log := r.waitFor(t, last, 1)
	want := []string{
		"connected",
		"hello",
		fmt.Sprintf("posted D %s %q bot=false", w.owner.ID, `say "hi" <now>`),
		fmt.Sprintf("posted D %s %q bot=true", w.bot.ID, "the bot's own reply"),
		fmt.Sprintf("edited %s %q", p.ID, "approve"),
		fmt.Sprintf("reacted %s %s white_check_mark", w.owner.ID, p.ID),
		last,
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// TestListenReconnects drops the sockets: Disconnected, then Connected
// again, and events after the reconnection arrive; what was posted while
// no socket was up is there for Connected's catch-up.
func TestListenReconnects(t *testing.T) {
	w := newWorld(t)
	r := newRecorder()
	var since int64 = 1
	var caught []string
	r.onConnected = func(ctx context.Context) {
		posts, err := w.c.PostsSince(ctx, w.dm, since)
		if err != nil {
			t.Errorf("catch-up: %v", err)
		}
		for _, p := range posts {
			caught = append(caught, p.Message)
			since = max(since, p.UpdateAt)
		}
	}
	listen(t, w.c, r)
	r.waitFor(t, "connected", 1)
	w.s.Post(w.owner.ID, w.dm, "", "before")
	r.waitFor(t, fmt.Sprintf("posted D %s %q bot=false", w.owner.ID, "before"), 1)

	w.s.SetDown(true) // drops the socket and refuses reconnection
	r.waitFor(t, "disconnected", 2)
	w.s.Post(w.owner.ID, w.dm, "", "while down")
	w.s.SetDown(false)
	r.waitFor(t, "connected", 2)
	w.s.Post(w.owner.ID, w.dm, "", "after")
	r.waitFor(t, fmt.Sprintf("posted D %s %q bot=false", w.owner.ID, "after"), 1)

	w.s.DropSockets()
	r.waitFor(t, "connected", 3)
	w.s.Post(w.owner.ID, w.dm, "", "after the drop")
	log := r.waitFor(t, fmt.Sprintf("posted D %s %q bot=false", w.owner.ID, "after the drop"), 1)
	// Each catch-up lists what changed since the previous one, events
	// already delivered included ("after"): the handler dedupes.
	if got := strings.Join(caught, "|"); got != "before|while down|after" {
		t.Errorf("caught up on %q, want before|while down|after", got)
	}
	_, errs := r.snapshot()
	var ae *APIError
	if len(errs) < 3 || !errors.As(errs[1], &ae) || ae.Status != 503 {
		t.Errorf("Disconnected errors %v: the second should be the 503 of a down server", errs)
	}
	for i, l := range log {
		if l == "connected" && i+1 < len(log) && log[i+1] != "hello" {
			t.Errorf("after connected #%d came %q, want hello", i, log[i+1])
		}
	}
}

func TestListenBadToken(t *testing.T) {
	w := newWorld(t)
	tok := "8xk3q9wzb7f1jdm4ytr6hcn2pa"
	r := newRecorder()
	listen(t, w.client(t, tok), r)
	r.waitFor(t, "disconnected", 2)
	log, errs := r.snapshot()
	for _, l := range log {
		if l == "connected" {
			t.Fatal("Connected with a token the server does not know")
		}
	}
	if !strings.Contains(errs[0].Error(), "closed before authentication succeeded") || strings.Contains(errs[0].Error(), tok) {
		t.Errorf("error %v", errs[0])
	}
}

// TestListenNoPong: a server that stops reading never answers a ping;
// the connection is ended after PingInterval and reconnected.
func TestListenNoPong(t *testing.T) {
	srv := stubWS(t, func(ctx context.Context, c *websocket.Conn) {
		send(ctx, c, `{"event": "hello", "data": {}, "broadcast": {}, "seq": 0}`)
		send(ctx, c, `{"status":"OK","seq_reply":1}`)
		<-ctx.Done()
	})
	c, err := New(srv.URL, "8xk3q9wzb7f1jdm4ytr6hcn2pa")
	if err != nil {
		t.Fatal(err)
	}
	c.PingInterval = 50 * time.Millisecond
	c.Backoff = Backoff{Base: 10 * time.Millisecond, Cap: 10 * time.Millisecond}
	r := newRecorder()
	listen(t, c, r)
	r.waitFor(t, "connected", 2)
	_, errs := r.snapshot()
	if !strings.Contains(errs[0].Error(), "no pong within 50ms") {
		t.Errorf("Disconnected(%v), want the missing pong", errs[0])
	}
}

// TestListenSeqGap: a gap in the events' seq means the server dropped
// some; the connection is ended so that Connected catches up.
func TestListenSeqGap(t *testing.T) {
	srv := stubWS(t, func(ctx context.Context, c *websocket.Conn) {
		send(ctx, c, `{"event": "hello", "data": {}, "broadcast": {}, "seq": 0}`)
		send(ctx, c, `{"status":"OK","seq_reply":1}`)
		send(ctx, c, `{"event": "typing", "data": {}, "broadcast": {}, "seq": 1}`)
		send(ctx, c, `{"event": "typing", "data": {}, "broadcast": {}, "seq": 3}`)
		<-ctx.Done()
	})
	c, err := New(srv.URL, "8xk3q9wzb7f1jdm4ytr6hcn2pa")
	if err != nil {
		t.Fatal(err)
	}
	c.Backoff = Backoff{Base: time.Hour, Cap: time.Hour}
	r := newRecorder()
	listen(t, c, r)
	log := r.waitFor(t, "disconnected", 1)
	if got := strings.Join(log, ","); got != "connected,hello,other typing,disconnected" {
		t.Errorf("log %s", got)
	}
	_, errs := r.snapshot()
	if !strings.Contains(errs[0].Error(), "seq 3, expected 2") {
		t.Errorf("Disconnected(%v)", errs[0])
	}
}

// TestListenQueueFull: a handler that falls maxQueued events behind ends
// the connection; what was queued is still delivered, in order.
func TestListenQueueFull(t *testing.T) {
	written := make(chan struct{})
	srv := stubWS(t, func(ctx context.Context, c *websocket.Conn) {
		send(ctx, c, `{"event": "hello", "data": {}, "broadcast": {}, "seq": 0}`)
		send(ctx, c, `{"status":"OK","seq_reply":1}`)
		for i := 1; i <= maxQueued+10; i++ {
			send(ctx, c, fmt.Sprintf(`{"event": "typing", "data": {}, "broadcast": {}, "seq": %d}`, i))
		}
		close(written)
		<-ctx.Done()
	})
	c, err := New(srv.URL, "8xk3q9wzb7f1jdm4ytr6hcn2pa")
	if err != nil {
		t.Fatal(err)
	}
	c.Backoff = Backoff{Base: time.Hour, Cap: time.Hour}
	r := newRecorder()
	r.onConnected = func(context.Context) {
		<-written
		time.Sleep(100 * time.Millisecond) // the reader takes what was written
	}
	listen(t, c, r)
	log := r.waitFor(t, "disconnected", 1)
	_, errs := r.snapshot()
	if !errors.Is(errs[0], errQueueFull) {
		t.Fatalf("Disconnected(%v), want errQueueFull", errs[0])
	}
	if n := len(log) - 3; n < maxQueued-1 || n > maxQueued {
		t.Errorf("%d events delivered before the end, want the %d queued", n, maxQueued)
	}
}

func TestListenFailReply(t *testing.T) {
	tok := "8xk3q9wzb7f1jdm4ytr6hcn2pa"
	srv := stubWS(t, func(ctx context.Context, c *websocket.Conn) {
		send(ctx, c, `{"status":"FAIL","seq_reply":1,"error":{"id":"api.web_socket_router.not_authenticated.app_error","message":"token `+tok+` refused\nnext line"}}`)
		<-ctx.Done()
	})
	c, err := New(srv.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	c.Backoff = Backoff{Base: time.Hour, Cap: time.Hour}
	r := newRecorder()
	listen(t, c, r)
	r.waitFor(t, "disconnected", 1)
	_, errs := r.snapshot()
	var re *ReplyError
	if !errors.As(errs[0], &re) || strings.Contains(errs[0].Error(), tok) || strings.Contains(errs[0].Error(), "\n") ||
		!strings.Contains(errs[0].Error(), "authentication refused") {
		t.Errorf("Disconnected(%v)", errs[0])
	}
}

func TestListenEndsWithContext(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecorder()
	if err := w.c.Listen(ctx, r); err != context.Canceled {
		t.Fatalf("Listen = %v", err)
	}
	if log, _ := r.snapshot(); len(log) != 0 {
		t.Errorf("a Listen whose context had ended told the handler %v", log)
	}
}

// TestListenTLS: https:// becomes wss://, through a server that also
// offers HTTP/2 (the upgrade must still go over HTTP/1.1), and the REST
// calls share the transport.
func TestListenTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v4/users/me" {
			fmt.Fprintf(w, `{"id":%q,"username":"boxbot","is_bot":true}`, idBot)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		if _, _, err := c.Read(r.Context()); err != nil {
			return
		}
		send(r.Context(), c, `{"event": "hello", "data": {}, "broadcast": {}, "seq": 0}`)
		send(r.Context(), c, `{"status":"OK","seq_reply":1}`)
		c.Read(r.Context())
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	c, err := New(srv.URL, "8xk3q9wzb7f1jdm4ytr6hcn2pa")
	if err != nil {
		t.Fatal(err)
	}
	c.hc.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	if me, err := c.Me(ctxT(t)); err != nil || me.ID != idBot {
		t.Fatalf("Me over TLS: %+v, %v", me, err)
	}
	r := newRecorder()
	listen(t, c, r)
	r.waitFor(t, "hello", 1)
}
