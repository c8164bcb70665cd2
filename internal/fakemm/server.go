// Package fakemm is a stand-in Mattermost server for tests: in memory, on
// a real TCP listener at 127.0.0.1 (so that a gatewayd process can reach
// it), with the subset of the REST API v4 gatewayd uses, bearer tokens,
// users and bots, direct channels, and the WebSocket with
// authentication_challenge, hello, seq numbers, and posted, post_edited,
// reaction_added and reaction_removed events whose post and reaction are
// JSON strings, sent only to the members of the event's channel.
//
// Its shapes follow the Mattermost server's own code (model.Post,
// model.PostList, model.Reaction, model.AppError, model.WebSocketEvent and
// WebSocketResponse, api4/post.go, app/notification.go, app/reaction.go,
// platform/websocket_router.go and web_hub.go); see the comments where a
// behaviour is taken from one. It does not parse mentions: a post in a
// direct channel lists the other member in "mentions", as Mattermost does
// for every direct message.
//
// No production package may import it (internal/gate/rules.go).
package fakemm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"
)

// User is a user or bot account of the fake server, with its bearer token.
type User struct {
	ID       string // 26 characters of a-z and 0-9
	Username string
	Token    string
	Bot      bool
}

// Post is a post as the fake server holds it.
type Post struct {
	ID, ChannelID, RootID, UserID, Message, Type string
	CreateAt, UpdateAt, EditAt, DeleteAt         int64
	FromBot                                      bool // props.from_bot is "true": the author is a bot
}

type channel struct {
	id, typ, name string
	members       []string
}

func (c *channel) member(userID string) bool {
	for _, m := range c.members {
		if m == userID {
			return true
		}
	}
	return false
}

type reaction struct {
	UserID, PostID, EmojiName, ChannelID string
	CreateAt, UpdateAt, DeleteAt         int64
}

// Server is a fake Mattermost server. Its methods may be called from any
// goroutine. The test helpers (AddUser, Post, Edit, React, ...) panic on a
// caller's mistake (an unknown user, a post outside the user's channels),
// as they can only be a bug in the test.
type Server struct {
	ln   net.Listener
	hs   *http.Server
	url  string
	wg   sync.WaitGroup // WebSocket handlers and writers
	done chan struct{}  // closed by Close

	mu        sync.Mutex
	closed    bool
	down      bool
	users     map[string]*User
	tokens    map[string]string // token → user id
	channels  map[string]*channel
	dms       map[string]string // "a__b", a < b → channel id
	posts     map[string]*Post
	order     []string              // post ids in create order
	reactions map[string][]reaction // by post id, in the order added
	patches   map[string]int
	last      int64          // the last timestamp handed out
	sockets   map[*conn]bool // every open WebSocket, authenticated or not
	changed   chan struct{}  // closed and replaced on every change
}

// Start listens on 127.0.0.1, on a port of the system's choosing, and
// serves until Close.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemm: %w", err)
	}
	s := &Server{
		ln: ln, url: "http://" + ln.Addr().String(), done: make(chan struct{}),
		users: map[string]*User{}, tokens: map[string]string{}, channels: map[string]*channel{},
		dms: map[string]string{}, posts: map[string]*Post{}, reactions: map[string][]reaction{},
		patches: map[string]int{}, sockets: map[*conn]bool{}, changed: make(chan struct{}),
	}
	s.hs = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(fmt.Sprintf("fakemm: serve: %v", err))
		}
	}()
	return s, nil
}

// URL is the server's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return s.url }

// Close stops the server, closes every WebSocket, and waits for the
// server's goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	for c := range s.sockets {
		c.drop()
	}
	s.mu.Unlock()
	s.hs.Close()
	s.wg.Wait()
}

// newID returns a Mattermost-shaped id: 26 characters of a-z and 0-9.
func newID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 26)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// nowLocked returns the current time in milliseconds, strictly above every
// time handed out before, so that posts made in the same millisecond still
// have increasing create_at.
func (s *Server) nowLocked() int64 {
	ms := time.Now().UnixMilli()
	if ms <= s.last {
		ms = s.last + 1
	}
	s.last = ms
	return ms
}

// changedLocked wakes WaitFor and WaitSockets.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// AddUser adds a user (a bot account when bot) and returns it with its
// token.
func (s *Server) AddUser(username string, bot bool) User {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.Username == username {
			panic("fakemm: AddUser: username " + username + " is taken")
		}
	}
	u := &User{ID: newID(), Username: username, Token: newID(), Bot: bot}
	s.users[u.ID] = u
	s.tokens[u.Token] = u.ID
	return *u
}

// DirectChannel returns the id of the direct channel between users a and
// b, creating it on first use; either order gives the same channel, the
// one POST /api/v4/channels/direct answers with.
func (s *Server) DirectChannel(a, b string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[a] == nil || s.users[b] == nil {
		panic("fakemm: DirectChannel: unknown user")
	}
	return s.directLocked(a, b).id
}

func (s *Server) directLocked(a, b string) *channel {
	if b < a {
		a, b = b, a
	}
	name := a + "__" + b
	if id, ok := s.dms[name]; ok {
		return s.channels[id]
	}
	c := &channel{id: newID(), typ: "D", name: name, members: []string{a, b}}
	if a == b {
		c.members = c.members[:1]
	}
	s.channels[c.id] = c
	s.dms[name] = c.id
	return c
}

// Post stores a post as if user userID had written it in channelID (in
// the thread of rootID when not ""), from another client, and broadcasts
// posted. While the server is down it is stored but not broadcast.
func (s *Server) Post(userID, channelID, rootID, message string) Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, status, msg := s.createLocked(userID, channelID, rootID, message)
	if p == nil {
		panic(fmt.Sprintf("fakemm: Post: %d %s", status, msg))
	}
	return *p
}

// createLocked stores a post and broadcasts it; on a refusal it returns
// nil, the HTTP status and the reason.
func (s *Server) createLocked(userID, channelID, rootID, message string) (*Post, int, string) {
	u, c := s.users[userID], s.channels[channelID]
	switch {
	case u == nil:
		return nil, http.StatusUnauthorized, "unknown user"
	case c == nil || !c.member(userID):
		return nil, http.StatusForbidden, "not a member of the channel"
	case message == "":
		return nil, http.StatusBadRequest, "empty message"
	case len([]rune(message)) > 16383:
		return nil, http.StatusBadRequest, "message over 16383 characters"
	}
	if rootID != "" {
		// api.post.create_post.root_id.app_error: the root must be a root
		// post of the same channel.
		r := s.posts[rootID]
		if r == nil || r.ChannelID != channelID || r.RootID != "" || r.DeleteAt != 0 {
			return nil, http.StatusBadRequest, "invalid root_id"
		}
	}
	now := s.nowLocked()
	p := &Post{ID: newID(), ChannelID: channelID, RootID: rootID, UserID: userID, Message: message,
		CreateAt: now, UpdateAt: now, FromBot: u.Bot}
	s.posts[p.ID] = p
	s.order = append(s.order, p.ID)
	s.changedLocked()
	s.broadcastLocked(c, "posted", s.postedData(c, u, p))
	return p, http.StatusCreated, ""
}

// Edit replaces the message of post postID as if its author userID had
// edited it: edit_at and update_at are set, post_edited is broadcast.
func (s *Server) Edit(userID, postID, message string) Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.posts[postID]
	if p == nil || p.UserID != userID {
		panic("fakemm: Edit: no post " + postID + " of user " + userID)
	}
	s.editLocked(p, message)
	return *p
}

func (s *Server) editLocked(p *Post, message string) {
	now := s.nowLocked()
	p.Message, p.EditAt, p.UpdateAt = message, now, now
	s.changedLocked()
	s.broadcastLocked(s.channels[p.ChannelID], "post_edited", map[string]any{"post": postJSON(p)})
}

// React adds user userID's emoji reaction to post postID (replacing the
// same one), bumps the post's update_at as Mattermost does, and
// broadcasts reaction_added. It returns the time just before the event's
// frames were handed to the WebSocket writers.
func (s *Server) React(userID, postID, emoji string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, c := s.reactable(userID, postID, "React")
	now := s.nowLocked()
	r := reaction{UserID: userID, PostID: postID, EmojiName: emoji, ChannelID: c.id, CreateAt: now, UpdateAt: now}
	rs := s.reactions[postID]
	for i := range rs {
		if rs[i].UserID == userID && rs[i].EmojiName == emoji {
			rs = append(rs[:i:i], rs[i+1:]...)
			break
		}
	}
	s.reactions[postID] = append(rs, r)
	p.UpdateAt = now
	s.changedLocked()
	at := time.Now()
	s.broadcastLocked(c, "reaction_added", map[string]any{"reaction": reactionJSON(r)})
	return at
}

// Unreact removes user userID's emoji reaction from post postID, bumps the
// post's update_at and broadcasts reaction_removed.
func (s *Server) Unreact(userID, postID, emoji string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, c := s.reactable(userID, postID, "Unreact")
	rs := s.reactions[postID]
	for i := range rs {
		if rs[i].UserID == userID && rs[i].EmojiName == emoji {
			r := rs[i]
			s.reactions[postID] = append(rs[:i:i], rs[i+1:]...)
			now := s.nowLocked()
			r.UpdateAt, r.DeleteAt = now, now
			p.UpdateAt = now
			s.changedLocked()
			s.broadcastLocked(c, "reaction_removed", map[string]any{"reaction": reactionJSON(r)})
			return
		}
	}
	panic("fakemm: Unreact: no " + emoji + " of user " + userID + " on post " + postID)
}

func (s *Server) reactable(userID, postID, what string) (*Post, *channel) {
	p := s.posts[postID]
	if p == nil || s.users[userID] == nil {
		panic("fakemm: " + what + ": unknown post or user")
	}
	c := s.channels[p.ChannelID]
	if !c.member(userID) {
		panic("fakemm: " + what + ": user " + userID + " is not in the post's channel")
	}
	return p, c
}

// Posts returns the posts of channelID in create order, as they are now.
func (s *Server) Posts(channelID string) []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	for _, id := range s.order {
		if p := s.posts[id]; p.ChannelID == channelID {
			out = append(out, *p)
		}
	}
	return out
}

// WaitFor waits until some post, created or patched at any time, satisfies
// f, and returns its current state; f is called with the server's lock
// held, so it must not call the Server.
func (s *Server) WaitFor(ctx context.Context, f func(Post) bool) (Post, error) {
	for {
		s.mu.Lock()
		for _, id := range s.order {
			if p := *s.posts[id]; f(p) {
				s.mu.Unlock()
				return p, nil
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return Post{}, fmt.Errorf("fakemm: WaitFor: %w", ctx.Err())
		case <-ch:
		}
	}
}

// PatchCount is how many times post postID was patched through the REST
// API (PUT /api/v4/posts/{id}/patch); Edit does not count.
func (s *Server) PatchCount(postID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.patches[postID]
}

// Sockets is the number of authenticated WebSockets of user userID.
func (s *Server) Sockets(userID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.socketsLocked(userID)
}

func (s *Server) socketsLocked(userID string) int {
	n := 0
	for c := range s.sockets {
		if c.userID == userID {
			n++
		}
	}
	return n
}

// WaitSockets waits until user userID has at least n authenticated
// WebSockets.
func (s *Server) WaitSockets(ctx context.Context, userID string, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.socketsLocked(userID), s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fakemm: WaitSockets: %d of %d: %w", got, n, ctx.Err())
		case <-ch:
		}
	}
}

// DropSockets closes every WebSocket; clients must reconnect.
func (s *Server) DropSockets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked()
}

func (s *Server) dropLocked() {
	for c := range s.sockets {
		c.drop()
		delete(s.sockets, c)
	}
	s.changedLocked()
}

// SetDown takes the server down (every REST request and WebSocket upgrade
// answers 503, open WebSockets are closed) or brings it back. While down,
// Post, Edit and React still store (the owner wrote from another client)
// but broadcast nothing.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
	if down {
		s.dropLocked()
	}
}

// sortedDesc returns posts newest first, as the server's order lists them.
func sortedDesc(ps []*Post) []*Post {
	sort.Slice(ps, func(i, j int) bool { return ps[i].CreateAt > ps[j].CreateAt })
	return ps
}
