// Package mm is gatewayd's client for the Mattermost API v4: the REST calls
// gatewayd makes (the bot's own user, users, the direct channel with an
// owner, posts, edits, threads, reactions) by hand on net/http, and the
// WebSocket event stream (github.com/coder/websocket) with
// authentication_challenge, keepalive pings and reconnection with capped
// exponential backoff.
//
// Everything the server sends is untrusted input to this package: it is
// read leniently (Mattermost adds fields in every release, so unknown
// members are ignored) but never loosely: names match case-sensitively, a
// duplicate name, invalid UTF-8, a number where a string belongs, a
// fraction or an out-of-range number where an integer belongs, and an id
// that is not 26 characters of a-z and 0-9 are errors (go-json-experiment's
// defaults plus the checks below), never a panic.
//
// The bot token is sent in the Authorization header and in the WebSocket's
// authentication_challenge, and nowhere else: no error, log line or fmt
// verb of a Client carries it (the Client holds it in a closure, which fmt
// cannot look into; text the server sends back is redacted; and every
// error is checked for it before it leaves the package).
package mm

import (
	"fmt"
	"slices"
	"strings"

	"boxmaker/wire"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// User is a Mattermost user (or bot account).
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	IsBot    bool   `json:"is_bot"`
}

// Channel is a Mattermost channel. Type is "D" for a direct channel
// between two users, "O" open, "P" private, "G" a group message.
type Channel struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Post is a Mattermost post as gatewayd needs it. FromBot, FromWebhook and
// FromPlugin come from the post's props (from_bot, from_webhook,
// from_plugin set to "true" or true): a webhook's or a plugin's post
// carries the user id of whoever created the webhook or of any user the
// plugin chose, so only a post with all three false, Type "" and DeleteAt 0
// is something that user wrote.
type Post struct {
	ID        string
	ChannelID string
	RootID    string
	UserID    string
	Message   string
	Type      string
	CreateAt  int64
	UpdateAt  int64
	EditAt    int64
	DeleteAt  int64

	FromBot     bool
	FromWebhook bool
	FromPlugin  bool
}

// Reaction is an emoji reaction of a user on a post.
type Reaction struct {
	UserID    string `json:"user_id"`
	PostID    string `json:"post_id"`
	EmojiName string `json:"emoji_name"`
	CreateAt  int64  `json:"create_at"`
}

// maxEmojiName bounds an emoji name; Mattermost's own limit is 64.
const maxEmojiName = 64

// wirePost is a post as the server encodes it (model.Post's JSON).
type wirePost struct {
	ID        string                    `json:"id"`
	CreateAt  int64                     `json:"create_at"`
	UpdateAt  int64                     `json:"update_at"`
	EditAt    int64                     `json:"edit_at"`
	DeleteAt  int64                     `json:"delete_at"`
	UserID    string                    `json:"user_id"`
	ChannelID string                    `json:"channel_id"`
	RootID    string                    `json:"root_id"`
	Message   string                    `json:"message"`
	Type      string                    `json:"type"`
	Props     map[string]jsontext.Value `json:"props"`
}

// decodeJSON is the one way this package reads JSON from the server:
// go-json-experiment's defaults (unknown members ignored; duplicate names,
// invalid UTF-8, case variants and mistyped numbers refused).
func decodeJSON(b []byte, v any) error {
	return json.Unmarshal(b, v)
}

// checkID refuses anything that is not a Mattermost id.
func checkID(what, id string) error {
	if !wire.ValidMattermostID(id) {
		return fmt.Errorf("%s %q is not a Mattermost id (26 characters of a-z and 0-9)", what, clip(id))
	}
	return nil
}

// checkTimes refuses a negative timestamp: Mattermost's are milliseconds
// since 1970, and a negative one can only be a forgery or a bug.
func checkTimes(ts ...int64) error {
	for _, t := range ts {
		if t < 0 {
			return fmt.Errorf("negative timestamp %d", t)
		}
	}
	return nil
}

// propTrue reads a boolean prop that Mattermost sets as the string "true"
// (or, from some clients and plugins, the JSON true). Absent, null, "" and
// "false" are false; any other type is an error.
func propTrue(props map[string]jsontext.Value, name string) (bool, error) {
	v, ok := props[name]
	if !ok {
		return false, nil
	}
	switch v.Kind() {
	case 'n':
		return false, nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return false, err
		}
		return s == "true", nil
	}
	return false, fmt.Errorf("props.%s is %s, not a string or a boolean", name, v.Kind())
}

// decodePost reads one post (model.Post's JSON).
func decodePost(b []byte) (Post, error) {
	var w wirePost
	if err := decodeJSON(b, &w); err != nil {
		return Post{}, fmt.Errorf("decoding a post: %w", err)
	}
	return w.post()
}

// post checks a decoded post and turns it into a Post.
func (w *wirePost) post() (Post, error) {
	if err := checkID("post id", w.ID); err != nil {
		return Post{}, err
	}
	if err := checkID("post "+w.ID+": channel id", w.ChannelID); err != nil {
		return Post{}, err
	}
	if err := checkID("post "+w.ID+": user id", w.UserID); err != nil {
		return Post{}, err
	}
	if w.RootID != "" {
		if err := checkID("post "+w.ID+": root id", w.RootID); err != nil {
			return Post{}, err
		}
	}
	if err := checkTimes(w.CreateAt, w.UpdateAt, w.EditAt, w.DeleteAt); err != nil {
		return Post{}, fmt.Errorf("post %s: %w", w.ID, err)
	}
	p := Post{ID: w.ID, ChannelID: w.ChannelID, RootID: w.RootID, UserID: w.UserID,
		Message: w.Message, Type: w.Type,
		CreateAt: w.CreateAt, UpdateAt: w.UpdateAt, EditAt: w.EditAt, DeleteAt: w.DeleteAt}
	var err error
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"from_bot", &p.FromBot}, {"from_webhook", &p.FromWebhook}, {"from_plugin", &p.FromPlugin}} {
		if *f.dst, err = propTrue(w.Props, f.name); err != nil {
			return Post{}, fmt.Errorf("post %s: %w", w.ID, err)
		}
	}
	return p, nil
}

// wirePostList is model.PostList: the ids in order and the posts by id.
// Other members (next_post_id, prev_post_id, has_next, first_inaccessible_post_time) are ignored.
type wirePostList struct {
	Order []string            `json:"order"`
	Posts map[string]wirePost `json:"posts"`
}

// decodePostList reads a model.PostList and returns the posts its order
// names, each once, sorted by CreateAt (then by id, so that equal times
// have one order). Posts the map holds but the order does not name are
// left out: GET /channels/{id}/posts?since puts the thread roots of
// changed replies in the map without naming them in the order, because
// they did not change. A null list is empty.
func decodePostList(b []byte) ([]Post, error) {
	var l wirePostList
	if err := decodeJSON(b, &l); err != nil {
		return nil, fmt.Errorf("decoding a post list: %w", err)
	}
	seen := make(map[string]bool, len(l.Order))
	posts := make([]Post, 0, len(l.Order))
	for _, id := range l.Order {
		if seen[id] {
			continue
		}
		seen[id] = true
		w, ok := l.Posts[id]
		if !ok {
			return nil, fmt.Errorf("post list: order names %q, which is not in posts", clip(id))
		}
		if w.ID != id {
			return nil, fmt.Errorf("post list: posts[%q] has id %q", clip(id), clip(w.ID))
		}
		p, err := w.post()
		if err != nil {
			return nil, fmt.Errorf("post list: %w", err)
		}
		posts = append(posts, p)
	}
	sortPosts(posts)
	return posts, nil
}

// sortPosts orders posts by CreateAt, then by id.
func sortPosts(posts []Post) {
	slices.SortFunc(posts, func(a, b Post) int {
		if a.CreateAt != b.CreateAt {
			if a.CreateAt < b.CreateAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// decodeReaction reads one reaction (model.Reaction's JSON).
func decodeReaction(b []byte) (Reaction, error) {
	var r Reaction
	if err := decodeJSON(b, &r); err != nil {
		return Reaction{}, fmt.Errorf("decoding a reaction: %w", err)
	}
	return r, r.check()
}

// check refuses a reaction that names no real user, post or emoji.
func (r *Reaction) check() error {
	if err := checkID("reaction: user id", r.UserID); err != nil {
		return err
	}
	if err := checkID("reaction: post id", r.PostID); err != nil {
		return err
	}
	if r.EmojiName == "" || len(r.EmojiName) > maxEmojiName {
		return fmt.Errorf("reaction: emoji name %q is empty or over %d bytes", clip(r.EmojiName), maxEmojiName)
	}
	return checkTimes(r.CreateAt)
}

// decodeReactions reads a post's reactions: a JSON array, or null (which
// Mattermost sends for a post without any).
func decodeReactions(b []byte) ([]Reaction, error) {
	var rs []Reaction
	if err := decodeJSON(b, &rs); err != nil {
		return nil, fmt.Errorf("decoding reactions: %w", err)
	}
	for i := range rs {
		if err := rs[i].check(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// decodeUser reads one user (model.User's JSON; only id, username and
// is_bot are read).
func decodeUser(b []byte) (User, error) {
	var u User
	if err := decodeJSON(b, &u); err != nil {
		return User{}, fmt.Errorf("decoding a user: %w", err)
	}
	if err := checkID("user id", u.ID); err != nil {
		return User{}, err
	}
	if u.Username == "" {
		return User{}, fmt.Errorf("user %s has no username", u.ID)
	}
	return u, nil
}

// decodeChannel reads one channel (model.Channel's JSON).
func decodeChannel(b []byte) (Channel, error) {
	var c Channel
	if err := decodeJSON(b, &c); err != nil {
		return Channel{}, fmt.Errorf("decoding a channel: %w", err)
	}
	if err := checkID("channel id", c.ID); err != nil {
		return Channel{}, err
	}
	if c.Type == "" {
		return Channel{}, fmt.Errorf("channel %s has no type", c.ID)
	}
	return c, nil
}

// clip shortens server text quoted in an error, so that a hostile server
// cannot fill a log line.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
