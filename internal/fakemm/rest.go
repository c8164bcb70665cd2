package fakemm

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// appError is model.AppError as the server sends it.
type appError struct {
	ID            string `json:"id"`
	Message       string `json:"message"`
	DetailedError string `json:"detailed_error"`
	RequestID     string `json:"request_id,omitempty"`
	StatusCode    int    `json:"status_code,omitempty"`
}

// The errors the fake answers with, by Mattermost's ids and English texts.
var (
	errDown        = appError{ID: "fakemm.server_down", Message: "The server is down (fakemm SetDown)."}
	errSession     = appError{ID: "api.context.session_expired.app_error", Message: "Invalid or expired session, please login again."}
	errPermissions = appError{ID: "api.context.permissions.app_error", Message: "You do not have the appropriate permissions."}
	errParam       = appError{ID: "api.context.invalid_url_param.app_error", Message: "Invalid or missing parameter in request URL."}
	errBody        = appError{ID: "api.context.invalid_body_param.app_error", Message: "Invalid or missing parameter in request body."}
	errNoPost      = appError{ID: "app.post.get.app_error", Message: "Unable to get the post."}
	errNoUser      = appError{ID: "app.user.missing_account.const", Message: "Unable to find the user."}
	errNotFound    = appError{ID: "api.context.404.app_error", Message: "Sorry, we could not find the page."}
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, e appError) {
	e.StatusCode, e.RequestID = status, newID()
	writeJSON(w, status, e)
}

// handler is a REST handler for an authenticated user, called with the
// Server's lock held.
type handler func(w http.ResponseWriter, r *http.Request, me *User)

// routes is the REST subset gatewayd uses and the WebSocket.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v4/websocket", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			writeError(w, http.StatusServiceUnavailable, errDown)
			return
		}
		s.serveWebSocket(w, r)
	})
	for pattern, h := range map[string]handler{
		"GET /api/v4/users/me":             s.getMe,
		"GET /api/v4/users/{id}":           s.getUser,
		"POST /api/v4/channels/direct":     s.createDirect,
		"POST /api/v4/posts":               s.createPost,
		"PUT /api/v4/posts/{id}/patch":     s.patchPost,
		"GET /api/v4/channels/{id}/posts":  s.getPosts,
		"GET /api/v4/posts/{id}/thread":    s.getThread,
		"GET /api/v4/posts/{id}/reactions": s.getReactions,
	} {
		mux.HandleFunc(pattern, s.authed(h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, errNotFound)
	})
	return mux
}

// authed answers 503 while down and 401 without a known bearer token
// (Authorization: Bearer or Token, as the server accepts), then runs h
// with the lock held.
func (s *Server) authed(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.down {
			writeError(w, http.StatusServiceUnavailable, errDown)
			return
		}
		auth := r.Header.Get("Authorization")
		var token string
		for _, scheme := range []string{"bearer ", "token "} {
			if len(auth) > len(scheme) && strings.EqualFold(auth[:len(scheme)], scheme) {
				token = auth[len(scheme):]
			}
		}
		id, ok := s.tokens[token]
		if token == "" || !ok {
			writeError(w, http.StatusUnauthorized, errSession)
			return
		}
		h(w, r, s.users[id])
	}
}

// pathID reads a path id, answering 400 when it is not a Mattermost id.
func pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, http.StatusBadRequest, errParam)
		return "", false
	}
	return id, true
}

func validID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (s *Server) getMe(w http.ResponseWriter, _ *http.Request, me *User) {
	writeJSON(w, http.StatusOK, userJSON(me))
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, _ *User) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	u := s.users[id]
	if u == nil {
		writeError(w, http.StatusNotFound, errNoUser)
		return
	}
	writeJSON(w, http.StatusOK, userJSON(u))
}

// createDirect is api4/channel.go's createDirectChannel: two user ids, the
// caller one of them; the existing channel or a new one, 201 either way.
func (s *Server) createDirect(w http.ResponseWriter, r *http.Request, me *User) {
	var ids []string
	if json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&ids) != nil || len(ids) != 2 || !validID(ids[0]) || !validID(ids[1]) {
		writeError(w, http.StatusBadRequest, errBody)
		return
	}
	if ids[0] != me.ID && ids[1] != me.ID {
		writeError(w, http.StatusForbidden, errPermissions)
		return
	}
	if s.users[ids[0]] == nil || s.users[ids[1]] == nil {
		writeError(w, http.StatusBadRequest, appError{ID: "api.channel.create_direct_channel.invalid_user.app_error", Message: "Invalid user ID for direct channel creation."})
		return
	}
	writeJSON(w, http.StatusCreated, channelJSON(s.directLocked(ids[0], ids[1])))
}

func (s *Server) createPost(w http.ResponseWriter, r *http.Request, me *User) {
	var req struct {
		ChannelID string `json:"channel_id"`
		RootID    string `json:"root_id"`
		Message   string `json:"message"`
	}
	if json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req) != nil || !validID(req.ChannelID) {
		writeError(w, http.StatusBadRequest, errBody)
		return
	}
	p, status, msg := s.createLocked(me.ID, req.ChannelID, req.RootID, req.Message)
	if p == nil {
		e := errPermissions
		if status != http.StatusForbidden {
			e = appError{ID: "api.post.create_post.app_error", Message: msg}
		}
		writeError(w, status, e)
		return
	}
	writeJSON(w, http.StatusCreated, postMap(p))
}

// patchPost is api4/post.go's patchPost: only the author may patch (the
// fake grants no edit_others_posts); update_at and edit_at are set and
// post_edited is broadcast.
func (s *Server) patchPost(w http.ResponseWriter, r *http.Request, me *User) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var req struct {
		Message *string `json:"message"`
	}
	if json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req) != nil {
		writeError(w, http.StatusBadRequest, errBody)
		return
	}
	p := s.posts[id]
	switch {
	case p == nil || !s.channels[p.ChannelID].member(me.ID):
		writeError(w, http.StatusForbidden, errPermissions)
		return
	case p.UserID != me.ID:
		writeError(w, http.StatusForbidden, errPermissions)
		return
	case req.Message != nil && (*req.Message == "" || len([]rune(*req.Message)) > 16383):
		writeError(w, http.StatusBadRequest, appError{ID: "model.post.is_valid.msg.app_error", Message: "Invalid message."})
		return
	}
	s.patches[id]++
	if req.Message != nil {
		s.editLocked(p, *req.Message)
	}
	writeJSON(w, http.StatusOK, postMap(p))
}

// getPosts is api4/post.go's getPostsForChannel: with since > 0, the posts
// whose update_at is above since (at most 1,000), in the order, and the
// roots of those replies in the map only (the SQL store's GetPostsSince);
// without it, the newest page of 60.
func (s *Server) getPosts(w http.ResponseWriter, r *http.Request, me *User) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	c := s.channels[id]
	if c == nil || !c.member(me.ID) {
		writeError(w, http.StatusForbidden, errPermissions)
		return
	}
	var since int64
	if v := r.URL.Query().Get("since"); v != "" {
		var err error
		if since, err = strconv.ParseInt(v, 10, 64); err != nil {
			writeError(w, http.StatusBadRequest, errParam)
			return
		}
	}
	var listed []*Post
	for i := len(s.order) - 1; i >= 0; i-- {
		p := s.posts[s.order[i]]
		if p.ChannelID != id {
			continue
		}
		if since <= 0 || p.UpdateAt > since {
			listed = append(listed, p)
		}
	}
	limit := 1000
	if since <= 0 {
		limit = 60
	}
	if len(listed) > limit {
		listed = listed[:limit]
	}
	extra := map[string]*Post{}
	for _, p := range listed {
		if p.RootID != "" {
			extra[p.RootID] = s.posts[p.RootID]
		}
	}
	writeJSON(w, http.StatusOK, postListJSON(sortedDesc(listed), extra))
}

// getThread is the whole thread of a post (its root's, for a reply),
// newest first in the order.
func (s *Server) getThread(w http.ResponseWriter, r *http.Request, me *User) {
	p := s.readablePost(w, r, me)
	if p == nil {
		return
	}
	root := p.ID
	if p.RootID != "" {
		root = p.RootID
	}
	var thread []*Post
	for _, id := range s.order {
		if q := s.posts[id]; q.ID == root || q.RootID == root {
			thread = append(thread, q)
		}
	}
	writeJSON(w, http.StatusOK, postListJSON(sortedDesc(thread), nil))
}

// getReactions answers null for a post without reactions.
func (s *Server) getReactions(w http.ResponseWriter, r *http.Request, me *User) {
	p := s.readablePost(w, r, me)
	if p == nil {
		return
	}
	var out []map[string]any
	for _, x := range s.reactions[p.ID] {
		out = append(out, reactionMap(x))
	}
	writeJSON(w, http.StatusOK, out)
}

// readablePost is the post of the path, answering 400, 404 or 403 when
// the id is not one, there is no such post, or me is not in its channel.
func (s *Server) readablePost(w http.ResponseWriter, r *http.Request, me *User) *Post {
	id, ok := pathID(w, r)
	if !ok {
		return nil
	}
	p := s.posts[id]
	if p == nil {
		writeError(w, http.StatusNotFound, errNoPost)
		return nil
	}
	if !s.channels[p.ChannelID].member(me.ID) {
		writeError(w, http.StatusForbidden, errPermissions)
		return nil
	}
	return p
}
