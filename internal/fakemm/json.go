package fakemm

import (
	"encoding/json"
)

// The JSON shapes below follow the server's models, field for field where
// gatewayd could read them, with encoding/json's escaping (<, > and & as
// \u003c, \u003e, \u0026), as the server's own json.Marshal writes them.

// wirePost is model.Post's JSON.
type wirePost struct {
	ID            string         `json:"id"`
	CreateAt      int64          `json:"create_at"`
	UpdateAt      int64          `json:"update_at"`
	EditAt        int64          `json:"edit_at"`
	DeleteAt      int64          `json:"delete_at"`
	IsPinned      bool           `json:"is_pinned"`
	UserID        string         `json:"user_id"`
	ChannelID     string         `json:"channel_id"`
	RootID        string         `json:"root_id"`
	OriginalID    string         `json:"original_id"`
	Message       string         `json:"message"`
	Type          string         `json:"type"`
	Props         map[string]any `json:"props"`
	Hashtags      string         `json:"hashtags"`
	PendingPostID string         `json:"pending_post_id"`
	ReplyCount    int64          `json:"reply_count"`
	LastReplyAt   int64          `json:"last_reply_at"`
	Participants  []any          `json:"participants"`
	Metadata      map[string]any `json:"metadata"`
}

func postMap(p *Post) wirePost {
	props := map[string]any{}
	if p.FromBot {
		props["from_bot"] = "true"
	}
	return wirePost{ID: p.ID, CreateAt: p.CreateAt, UpdateAt: p.UpdateAt, EditAt: p.EditAt, DeleteAt: p.DeleteAt,
		UserID: p.UserID, ChannelID: p.ChannelID, RootID: p.RootID, Message: p.Message, Type: p.Type,
		Props: props, Metadata: map[string]any{}}
}

// postJSON is a post as the JSON string events carry.
func postJSON(p *Post) string {
	b, err := json.Marshal(postMap(p))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wirePostList is model.PostList's JSON.
type wirePostList struct {
	Order      []string            `json:"order"`
	Posts      map[string]wirePost `json:"posts"`
	NextPostID string              `json:"next_post_id"`
	PrevPostID string              `json:"prev_post_id"`
	HasNext    bool                `json:"has_next"`
}

// postListJSON lists ordered in the order and the map, and extra in the
// map only.
func postListJSON(ordered []*Post, extra map[string]*Post) wirePostList {
	l := wirePostList{Order: []string{}, Posts: map[string]wirePost{}}
	for _, p := range extra {
		l.Posts[p.ID] = postMap(p)
	}
	for _, p := range ordered {
		l.Order = append(l.Order, p.ID)
		l.Posts[p.ID] = postMap(p)
	}
	return l
}

// reactionMap is model.Reaction's JSON.
func reactionMap(r reaction) map[string]any {
	return map[string]any{
		"user_id": r.UserID, "post_id": r.PostID, "emoji_name": r.EmojiName,
		"create_at": r.CreateAt, "update_at": r.UpdateAt, "delete_at": r.DeleteAt,
		"remote_id": "", "channel_id": r.ChannelID,
	}
}

// reactionJSON is a reaction as the JSON string events carry.
func reactionJSON(r reaction) string {
	b, err := json.Marshal(reactionMap(r))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// userJSON is model.User's JSON as another user sees it (sanitized).
func userJSON(u *User) map[string]any {
	roles := "system_user"
	if u.Bot {
		roles = "system_user system_post_all"
	}
	return map[string]any{
		"id": u.ID, "create_at": 1, "update_at": 1, "delete_at": 0, "username": u.Username,
		"auth_data": "", "auth_service": "", "email": "", "nickname": "", "first_name": "",
		"last_name": "", "position": "", "roles": roles, "locale": "en",
		"timezone": map[string]string{"automaticTimezone": "", "manualTimezone": "", "useAutomaticTimezone": "true"},
		"is_bot":   u.Bot, "disable_welcome_email": false,
	}
}

// channelJSON is model.Channel's JSON.
func channelJSON(c *channel) map[string]any {
	return map[string]any{
		"id": c.id, "create_at": 1, "update_at": 1, "delete_at": 0, "team_id": "", "type": c.typ,
		"display_name": "", "name": c.name, "header": "", "purpose": "", "last_post_at": 0,
		"total_msg_count": 0, "extra_update_at": 0, "creator_id": "", "scheme_id": nil,
		"props": nil, "group_constrained": nil, "shared": nil, "total_msg_count_root": 0,
		"policy_id": nil, "last_root_post_at": 0,
	}
}
