package fakemm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// world is a server with an owner, a bot, a stranger and the bot's direct
// channel with the owner.
type world struct {
	s                    *Server
	owner, bot, stranger User
	dm                   string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := &world{s: s, owner: s.AddUser("owner", false), bot: s.AddUser("boxbot", true), stranger: s.AddUser("mallory", false)}
	w.dm = s.DirectChannel(w.bot.ID, w.owner.ID)
	return w
}

// call makes one REST request and returns the status and body.
func (w *world) call(t *testing.T, method, path, auth, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, w.s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func errorID(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		ID         string `json:"id"`
		StatusCode int    `json:"status_code"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	return e.ID
}

func TestAuth(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"none", "", 401},
		{"unknown token", "Bearer " + newID(), 401},
		{"scheme only", "Bearer ", 401},
		{"another scheme", "Basic " + w.bot.Token, 401},
		{"bearer", "Bearer " + w.bot.Token, 200},
		{"lower-case bearer", "bearer " + w.bot.Token, 200},
		{"token scheme", "Token " + w.bot.Token, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := w.call(t, "GET", "/api/v4/users/me", tc.auth, "")
			if status != tc.want {
				t.Fatalf("status %d, want %d: %s", status, tc.want, body)
			}
			if status == 401 && errorID(t, body) != "api.context.session_expired.app_error" {
				t.Errorf("401 body %s", body)
			}
			if status == 200 && !bytes.Contains(body, []byte(`"id":"`+w.bot.ID+`"`)) {
				t.Errorf("me is not the bot: %s", body)
			}
		})
	}
}

func TestMembership(t *testing.T) {
	w := newWorld(t)
	root := w.s.Post(w.owner.ID, w.dm, "", "hello bot")
	mine := w.s.Post(w.bot.ID, w.dm, root.ID, "hello owner")
	stranger, bot := "Bearer "+w.stranger.Token, "Bearer "+w.bot.Token
	for _, tc := range []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"stranger reads the channel", "GET", "/api/v4/channels/" + w.dm + "/posts?since=1", stranger, "", 403},
		{"stranger posts", "POST", "/api/v4/posts", stranger, `{"channel_id":"` + w.dm + `","message":"hi"}`, 403},
		{"stranger reads the thread", "GET", "/api/v4/posts/" + root.ID + "/thread", stranger, "", 403},
		{"stranger reads reactions", "GET", "/api/v4/posts/" + root.ID + "/reactions", stranger, "", 403},
		{"stranger patches", "PUT", "/api/v4/posts/" + mine.ID + "/patch", stranger, `{"message":"x"}`, 403},
		{"bot patches the owner's post", "PUT", "/api/v4/posts/" + root.ID + "/patch", bot, `{"message":"x"}`, 403},
		{"stranger opens the bot's DM with the owner", "POST", "/api/v4/channels/direct", stranger, `["` + w.bot.ID + `","` + w.owner.ID + `"]`, 403},
		{"bot reads the channel", "GET", "/api/v4/channels/" + w.dm + "/posts?since=1", bot, "", 200},
		{"bot patches its post", "PUT", "/api/v4/posts/" + mine.ID + "/patch", bot, `{"message":"edited"}`, 200},
		{"bot replies to a reply", "POST", "/api/v4/posts", bot, `{"channel_id":"` + w.dm + `","root_id":"` + mine.ID + `","message":"x"}`, 400},
		{"unknown post", "GET", "/api/v4/posts/" + newID() + "/thread", bot, "", 404},
		{"not an id", "GET", "/api/v4/posts/abc/thread", bot, "", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := w.call(t, tc.method, tc.path, tc.auth, tc.body)
			if status != tc.want {
				t.Fatalf("status %d, want %d: %s", status, tc.want, body)
			}
			if status == 403 && errorID(t, body) != "api.context.permissions.app_error" {
				t.Errorf("403 body %s", body)
			}
		})
	}
	if got := w.s.Posts(w.dm); len(got) != 2 || got[1].Message != "edited" {
		t.Errorf("posts after the table: %+v", got)
	}
	if n := w.s.PatchCount(mine.ID); n != 1 {
		t.Errorf("PatchCount = %d, want 1", n)
	}
}

func TestDirectChannelBothOrders(t *testing.T) {
	w := newWorld(t)
	if w.s.DirectChannel(w.owner.ID, w.bot.ID) != w.dm {
		t.Fatal("the other order gave another channel")
	}
	status, body := w.call(t, "POST", "/api/v4/channels/direct", "Bearer "+w.bot.Token, `["`+w.owner.ID+`","`+w.bot.ID+`"]`)
	if status != 201 || !bytes.Contains(body, []byte(`"id":"`+w.dm+`"`)) || !bytes.Contains(body, []byte(`"type":"D"`)) {
		t.Fatalf("%d %s", status, body)
	}
}

func TestCreateAtStrictlyIncreases(t *testing.T) {
	w := newWorld(t)
	var last int64
	for i := range 200 {
		p := w.s.Post(w.owner.ID, w.dm, "", "n")
		if p.CreateAt <= last {
			t.Fatalf("post %d: create_at %d after %d", i, p.CreateAt, last)
		}
		last = p.CreateAt
	}
}

// TestPostsSince checks the server's rule: update_at above since, edits
// and reactions included, the roots of listed replies in the map only.
func TestPostsSince(t *testing.T) {
	w := newWorld(t)
	old := w.s.Post(w.owner.ID, w.dm, "", "old root")
	edited := w.s.Post(w.owner.ID, w.dm, "", "to be edited")
	reacted := w.s.Post(w.bot.ID, w.dm, "", "to be reacted to")
	since := reacted.CreateAt
	reply := w.s.Post(w.owner.ID, w.dm, old.ID, "a reply")
	w.s.Edit(w.owner.ID, edited.ID, "edited")
	w.s.React(w.owner.ID, reacted.ID, "+1")
	status, body := w.call(t, "GET", "/api/v4/channels/"+w.dm+"/posts?since="+itoa(since), "Bearer "+w.bot.Token, "")
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var l struct {
		Order []string                   `json:"order"`
		Posts map[string]json.RawMessage `json:"posts"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{reply.ID: true, edited.ID: true, reacted.ID: true}
	if len(l.Order) != len(want) {
		t.Fatalf("order %v, want the reply, the edited and the reacted post", l.Order)
	}
	for _, id := range l.Order {
		if !want[id] {
			t.Errorf("order lists %s", id)
		}
	}
	if _, ok := l.Posts[old.ID]; !ok {
		t.Error("the reply's root is not in the map")
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// dial opens an authenticated WebSocket for u and returns it with the
// frames it reads.
func (w *world) dial(t *testing.T, token string) (*websocket.Conn, <-chan string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.s.URL(), "http")+"/api/v4/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	frames := make(chan string, 100)
	go func() {
		defer close(frames)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			frames <- string(b)
		}
	}()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"seq":1,"action":"authentication_challenge","data":{"token":"`+token+`"}}`)); err != nil {
		t.Fatal(err)
	}
	return c, frames
}

func next(t *testing.T, frames <-chan string) string {
	t.Helper()
	select {
	case f, ok := <-frames:
		if !ok {
			return "<closed>"
		}
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame within 5 s")
	}
	return ""
}

func TestWebSocket(t *testing.T) {
	w := newWorld(t)
	_, bot := w.dial(t, w.bot.Token)
	if f := next(t, bot); !strings.HasPrefix(f, `{"event": "hello", "data": `) || !strings.HasSuffix(f, `, "seq": 0}`) {
		t.Fatalf("first frame %s, want hello with seq 0", f)
	}
	if f := next(t, bot); f != `{"status":"OK","seq_reply":1}` {
		t.Fatalf("second frame %s, want the OK reply", f)
	}
	_, stranger := w.dial(t, w.stranger.Token)
	next(t, stranger)
	next(t, stranger)
	if err := w.s.WaitSockets(context.Background(), w.stranger.ID, 1); err != nil {
		t.Fatal(err)
	}
	p := w.s.Post(w.owner.ID, w.dm, "", "<b>hi</b> & \"you\"")
	f := next(t, bot)
	var ev struct {
		Event     string            `json:"event"`
		Data      map[string]any    `json:"data"`
		Broadcast map[string]string `json:"broadcast"`
		Seq       int64             `json:"seq"`
	}
	if err := json.Unmarshal([]byte(f), &ev); err != nil {
		t.Fatal(err)
	}
	post, ok := ev.Data["post"].(string)
	if ev.Event != "posted" || ev.Seq != 1 || !ok || ev.Broadcast["channel_id"] != w.dm || ev.Data["channel_type"] != "D" ||
		ev.Data["sender_name"] != "@owner" || ev.Data["mentions"] != `["`+w.bot.ID+`"]` {
		t.Fatalf("posted frame %s", f)
	}
	if !strings.Contains(post, `"message":"\u003cb\u003ehi\u003c/b\u003e \u0026 \"you\""`) || !strings.Contains(post, `"id":"`+p.ID+`"`) {
		t.Errorf("post payload %s", post)
	}
	w.s.Post(w.bot.ID, w.dm, "", "the bot's own post")
	if f := next(t, bot); !strings.Contains(f, `\"from_bot\":\"true\"`) || !strings.HasSuffix(f, `"seq": 2}`) {
		t.Errorf("the bot's own post: %s", f)
	}
	w.s.React(w.owner.ID, p.ID, "+1")
	if f := next(t, bot); !strings.HasPrefix(f, `{"event": "reaction_added", "data": {"reaction":"{`) {
		t.Errorf("reaction frame %s", f)
	}
	select {
	case f := <-stranger:
		t.Errorf("a stranger got an event of the DM: %s", f)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWebSocketRefusals(t *testing.T) {
	w := newWorld(t)
	_, frames := w.dial(t, "not-a-token")
	if f := next(t, frames); f != "<closed>" {
		t.Errorf("a bad token got %s, want the connection closed", f)
	}
	c, frames := w.dial(t, w.bot.Token)
	next(t, frames)
	next(t, frames)
	if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"seq":2,"action":"user_typing","data":{}}`)); err != nil {
		t.Fatal(err)
	}
	if f := next(t, frames); !strings.Contains(f, `"status":"FAIL"`) || !strings.Contains(f, `"seq_reply":2`) {
		t.Errorf("unknown action: %s", f)
	}
}

func TestDownMode(t *testing.T) {
	w := newWorld(t)
	_, frames := w.dial(t, w.bot.Token)
	next(t, frames)
	next(t, frames)
	w.s.SetDown(true)
	if f := next(t, frames); f != "<closed>" {
		t.Fatalf("an open socket got %s when the server went down", f)
	}
	status, _ := w.call(t, "POST", "/api/v4/posts", "Bearer "+w.bot.Token, `{"channel_id":"`+w.dm+`","message":"lost"}`)
	if status != 503 {
		t.Fatalf("REST while down: %d", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.s.URL(), "http")+"/api/v4/websocket", nil)
	if err == nil || resp == nil || resp.StatusCode != 503 {
		t.Fatalf("upgrade while down: %v %v", err, resp)
	}
	during := w.s.Post(w.owner.ID, w.dm, "", "written while down")
	w.s.SetDown(false)
	posts := w.s.Posts(w.dm)
	if len(posts) != 1 || posts[0].ID != during.ID {
		t.Fatalf("posts after down: %+v", posts)
	}
	status, body := w.call(t, "GET", "/api/v4/channels/"+w.dm+"/posts?since=1", "Bearer "+w.bot.Token, "")
	if status != 200 || !bytes.Contains(body, []byte(during.ID)) {
		t.Errorf("catch-up after down: %d %s", status, body)
	}
}

func TestWaitForAndDrop(t *testing.T) {
	w := newWorld(t)
	_, frames := w.dial(t, w.bot.Token)
	next(t, frames)
	next(t, frames)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go w.s.Post(w.bot.ID, w.dm, "", "done")
	p, err := w.s.WaitFor(ctx, func(p Post) bool { return p.Message == "done" })
	if err != nil || p.UserID != w.bot.ID || !p.FromBot {
		t.Fatalf("WaitFor: %+v %v", p, err)
	}
	w.s.DropSockets()
	for f := next(t, frames); f != "<closed>"; f = next(t, frames) {
	}
	if n := w.s.Sockets(w.bot.ID); n != 0 {
		t.Errorf("%d sockets after DropSockets", n)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := w.s.WaitFor(short, func(p Post) bool { return p.Message == "never" }); err == nil {
		t.Error("WaitFor of a post that never comes returned nil")
	}
}

// TestRESTPostAnswers: create and patch answer the post as an object
// (model.Post), the bot's with props.from_bot "true".
func TestRESTPostAnswers(t *testing.T) {
	w := newWorld(t)
	status, body := w.call(t, "POST", "/api/v4/posts", "Bearer "+w.bot.Token, `{"channel_id":"`+w.dm+`","message":"a <b>"}`)
	var p struct {
		ID, Message string
		Props       map[string]any
		EditAt      int64 `json:"edit_at"`
	}
	if err := json.Unmarshal(body, &p); status != 201 || err != nil || p.Message != "a <b>" || p.Props["from_bot"] != "true" {
		t.Fatalf("create: %d %s %v", status, body, err)
	}
	if got := w.s.Posts(w.dm); len(got) != 1 || got[0].ID != p.ID {
		t.Fatalf("stored %+v", got)
	}
	status, body = w.call(t, "PUT", "/api/v4/posts/"+p.ID+"/patch", "Bearer "+w.bot.Token, `{"message":"b"}`)
	if err := json.Unmarshal(body, &p); status != 200 || err != nil || p.Message != "b" || p.EditAt == 0 {
		t.Fatalf("patch: %d %s %v", status, body, err)
	}
}
