package mm

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNewURL(t *testing.T) {
	for _, tc := range []struct {
		url, want string // want "" for a refusal
	}{
		{"http://chat.example.net", "http://chat.example.net"},
		{"https://chat.example.net:8065", "https://chat.example.net:8065"},
		{"http://127.0.0.1:1234", "http://127.0.0.1:1234"},
		{"https://[::1]:443", "https://[::1]:443"},
		{"", ""},
		{"chat.example.net", ""},
		{"ftp://chat.example.net", ""},
		{"ws://chat.example.net", ""},
		{"https://", ""},
		{"https://:443", ""},
		{"https://chat.example.net/", ""},
		{"https://chat.example.net/mattermost", ""},
		{"https://chat.example.net?", ""},
		{"https://chat.example.net?a=b", ""},
		{"https://chat.example.net#", ""},
		{"https://chat.example.net#top", ""},
		{"https://bot@chat.example.net", ""},
		{"https://bot:pw@chat.example.net", ""},
		{"https://chat.example.net:http", ""},
		{"https:chat.example.net", ""},
		{"https://chat.example.net\n", ""},
	} {
		c, err := New(tc.url, "tok")
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("New(%q) accepted it as %s", tc.url, c.Server())
		case tc.want != "" && err != nil:
			t.Errorf("New(%q): %v", tc.url, err)
		case tc.want != "" && c.Server() != tc.want:
			t.Errorf("New(%q).Server() = %q, want %q", tc.url, c.Server(), tc.want)
		}
	}
}

func TestNewToken(t *testing.T) {
	for _, tok := range []string{"", "abc def", "abc\n", "\tabc", "tök", strings.Repeat("a", maxToken+1)} {
		if _, err := New("https://chat.example.net", tok); err == nil {
			t.Errorf("New accepted token %q", tok)
		}
	}
	if _, err := New("https://chat.example.net", "8xk3q9wzb7f1jdm4ytr6hcn2pa"); err != nil {
		t.Errorf("a Mattermost token: %v", err)
	}
}

func TestMeAndUser(t *testing.T) {
	w := newWorld(t)
	me, err := w.c.Me(ctxT(t))
	if err != nil || me != (User{ID: w.bot.ID, Username: "boxbot", IsBot: true}) {
		t.Fatalf("Me = %+v, %v", me, err)
	}
	u, err := w.c.User(ctxT(t), w.owner.ID)
	if err != nil || u != (User{ID: w.owner.ID, Username: "owner"}) {
		t.Fatalf("User(owner) = %+v, %v", u, err)
	}
	_, err = w.c.User(ctxT(t), "8xk3q9wzb7f1jdm4ytr6hcn2pa")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 404 || ae.ID != "app.user.missing_account.const" {
		t.Fatalf("an unknown user: %v", err)
	}
	if _, err := w.c.User(ctxT(t), "../../users/me"); err == nil {
		t.Fatal("User accepted a path as an id")
	}
}

func TestDirectChannel(t *testing.T) {
	w := newWorld(t)
	ch, err := w.c.DirectChannel(ctxT(t), w.bot.ID, w.owner.ID)
	if err != nil || ch != (Channel{ID: w.dm, Type: "D"}) {
		t.Fatalf("DirectChannel = %+v, %v, want %s", ch, err, w.dm)
	}
	_, err = w.c.DirectChannel(ctxT(t), w.stranger.ID, w.owner.ID)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 403 || ae.ID != "api.context.permissions.app_error" ||
		!strings.Contains(err.Error(), "POST "+w.s.URL()+"/api/v4/channels/direct: 403 Forbidden: You do not have the appropriate permissions.") {
		t.Fatalf("someone else's channel: %v", err)
	}
}

func TestCreateAndPatchPost(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	msg := "tool `fetch`: <ok> & done — ✓"
	root, err := w.c.CreatePost(ctx, w.dm, "", msg)
	if err != nil || root.Message != msg || root.ChannelID != w.dm || root.UserID != w.bot.ID || !root.FromBot || root.CreateAt == 0 {
		t.Fatalf("CreatePost = %+v, %v", root, err)
	}
	reply, err := w.c.CreatePost(ctx, w.dm, root.ID, "in the thread")
	if err != nil || reply.RootID != root.ID {
		t.Fatalf("a reply: %+v, %v", reply, err)
	}
	if _, err := w.c.CreatePost(ctx, w.dm, reply.ID, "a reply to a reply"); err == nil {
		t.Error("the server's refusal of a reply's reply came back as success")
	}
	for _, bad := range []string{"", "\xff", strings.Repeat("é", MaxMessageRunes+1)} {
		if _, err := w.c.CreatePost(ctx, w.dm, "", bad); err == nil {
			t.Errorf("CreatePost accepted a message of %d bytes", len(bad))
		}
	}
	if n := len(w.s.Posts(w.dm)); n != 2 {
		t.Errorf("%d posts on the server, want 2", n)
	}
	edited, err := w.c.PatchPost(ctx, root.ID, "now edited")
	if err != nil || edited.Message != "now edited" || edited.EditAt == 0 || edited.UpdateAt <= root.UpdateAt {
		t.Fatalf("PatchPost = %+v, %v", edited, err)
	}
	if n := w.s.PatchCount(root.ID); n != 1 {
		t.Errorf("PatchCount = %d", n)
	}
	owners := w.s.Post(w.owner.ID, w.dm, "", "mine")
	var ae *APIError
	if _, err := w.c.PatchPost(ctx, owners.ID, "hijacked"); !errors.As(err, &ae) || ae.Status != 403 {
		t.Errorf("patching the owner's post: %v", err)
	}
}

func TestPostsSinceThreadReactions(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	root := w.s.Post(w.owner.ID, w.dm, "", "root")
	a := w.s.Post(w.bot.ID, w.dm, root.ID, "a")
	b := w.s.Post(w.owner.ID, w.dm, root.ID, "b")
	other := w.s.Post(w.owner.ID, w.dm, "", "other")
	w.s.Edit(w.owner.ID, b.ID, "b edited")
	w.s.React(w.owner.ID, other.ID, "+1")

	posts, err := w.c.PostsSince(ctx, w.dm, a.CreateAt)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(posts); got != idList(b.ID, other.ID) || posts[0].Message != "b edited" || posts[1].UpdateAt <= other.CreateAt {
		t.Errorf("PostsSince(a's create_at) = %v (%+v)", got, posts)
	}
	if _, err := w.c.PostsSince(ctx, w.dm, 0); err == nil {
		t.Error("PostsSince accepted since=0, which the server answers with the newest page")
	}
	thread, err := w.c.Thread(ctx, a.ID)
	if err != nil || ids(thread) != idList(root.ID, a.ID, b.ID) {
		t.Errorf("Thread = %v, %v", ids(thread), err)
	}
	rs, err := w.c.Reactions(ctx, root.ID)
	if err != nil || len(rs) != 0 {
		t.Errorf("no reactions: %+v, %v", rs, err)
	}
	rs, err = w.c.Reactions(ctx, other.ID)
	if err != nil || len(rs) != 1 || rs[0].UserID != w.owner.ID || rs[0].EmojiName != "+1" || rs[0].PostID != other.ID {
		t.Errorf("Reactions = %+v, %v", rs, err)
	}
	w.s.Unreact(w.owner.ID, other.ID, "+1")
	if rs, err = w.c.Reactions(ctx, other.ID); err != nil || len(rs) != 0 {
		t.Errorf("after Unreact: %+v, %v", rs, err)
	}
}

func ids(ps []Post) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.ID)
	}
	return idList(s...)
}

func idList(ids ...string) string { return strings.Join(ids, " ") }

func TestResponseLimitsAndRedirects(t *testing.T) {
	w := newWorld(t)
	w.c.MaxResponseBytes = 100
	if _, err := w.c.Me(ctxT(t)); err == nil || !strings.Contains(err.Error(), "over 100 bytes") {
		t.Errorf("a 100-byte limit: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "http://elsewhere.example/api/v4/users/me", http.StatusFound)
	}))
	defer srv.Close()
	c, err := New(srv.URL, "8xk3q9wzb7f1jdm4ytr6hcn2pa")
	if err != nil {
		t.Fatal(err)
	}
	var ae *APIError
	if _, err := c.Me(ctxT(t)); !errors.As(err, &ae) || ae.Status != 302 {
		t.Errorf("a redirect was not an error: %v", err)
	}
}
