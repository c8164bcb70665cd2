package mm

import (
	"errors"
	"strings"
	"testing"
)

// Ids and frames shaped like a real server's (model.Post's field order,
// the precomputed event layout with its spaces, json.Marshal's escapes).
const (
	idOwner   = "8xk3q9wzb7f1jdm4ytr6hcn2pa"
	idBot     = "b0tb0tb0tb0tb0tb0tb0tb0tb0"
	idChannel = "c4annelc4annelc4annelc4an1"
	idPost    = "p0stp0stp0stp0stp0stp0stp1"
	idRoot    = "r00tr00tr00tr00tr00tr00tr1"
)

const postPayload = `{\"id\":\"` + idPost + `\",\"create_at\":1758096300000,\"update_at\":1758096300000,\"edit_at\":0,\"delete_at\":0,\"is_pinned\":false,\"user_id\":\"` + idOwner + `\",\"channel_id\":\"` + idChannel + `\",\"root_id\":\"` + idRoot + `\",\"original_id\":\"\",\"message\":\"approve \\u003cnow\\u003e \\u0026 \\\"then\\\" \\ud83d\\udc4d\",\"type\":\"\",\"props\":{\"disable_group_highlight\":true},\"hashtags\":\"\",\"pending_post_id\":\"\",\"reply_count\":1,\"last_reply_at\":0,\"participants\":null,\"metadata\":{}}`

const postedFrame = `{"event": "posted", "data": {"channel_display_name":"@owner","channel_name":"` + idBot + `__` + idOwner + `","channel_type":"D","mentions":"[\"` + idBot + `\"]","post":"` + postPayload + `","sender_name":"@owner","set_online":true,"team_id":""}, "broadcast": {"omit_users":null,"user_id":"","channel_id":"` + idChannel + `","team_id":"","connection_id":"","omit_connection_id":""}, "seq": 7}`

const reactionFrame = `{"event":"reaction_added","data":{"reaction":"{\"user_id\":\"` + idOwner + `\",\"post_id\":\"` + idPost + `\",\"emoji_name\":\"+1\",\"create_at\":1758096301000,\"update_at\":1758096301000,\"delete_at\":0,\"remote_id\":\"\",\"channel_id\":\"` + idChannel + `\"}"},"broadcast":{"omit_users":null,"user_id":"","channel_id":"` + idChannel + `","team_id":""},"seq":8}`

var wantPost = Post{ID: idPost, ChannelID: idChannel, RootID: idRoot, UserID: idOwner,
	Message: "approve <now> & \"then\" 👍", CreateAt: 1758096300000, UpdateAt: 1758096300000}

func TestParseEvent(t *testing.T) {
	edited := strings.Replace(strings.Replace(postedFrame, `"posted"`, `"post_edited"`, 1), `\"edit_at\":0`, `\"edit_at\":1758096309000`, 1)
	wantEdited := wantPost
	wantEdited.EditAt = 1758096309000
	botPost := strings.Replace(postedFrame, `{\"disable_group_highlight\":true}`, `{\"from_bot\":\"true\"}`, 1)
	wantBot := wantPost
	wantBot.FromBot = true
	hook := strings.Replace(postedFrame, `{\"disable_group_highlight\":true}`, `{\"from_webhook\":true,\"override_username\":\"x\"}`, 1)
	wantHook := wantPost
	wantHook.FromWebhook = true
	for _, tc := range []struct {
		name, frame string
		want        Event
	}{
		{"hello", `{"event": "hello", "data": {"connection_id":"x","server_version":"10.5.0"}, "broadcast": {"user_id":"` + idBot + `"}, "seq": 0}`, Hello{}},
		{"posted", postedFrame, Posted{Post: wantPost, ChannelType: "D"}},
		{"posted by a bot", botPost, Posted{Post: wantBot, ChannelType: "D"}},
		{"posted by a webhook", hook, Posted{Post: wantHook, ChannelType: "D"}},
		{"post_edited", edited, PostEdited{Post: wantEdited}},
		{"reaction_added", reactionFrame, ReactionAdded{Reaction{UserID: idOwner, PostID: idPost, EmojiName: "+1", CreateAt: 1758096301000}}},
		{"reaction_removed", strings.Replace(reactionFrame, "reaction_added", "reaction_removed", 1), ReactionRemoved{Reaction{UserID: idOwner, PostID: idPost, EmojiName: "+1", CreateAt: 1758096301000}}},
		{"typing", `{"event":"typing","data":{"parent_id":"","user_id":"` + idOwner + `"},"broadcast":{"channel_id":"` + idChannel + `"},"seq":9}`, Other{Name: "typing"}},
		{"unknown event, odd data", `{"event":"x_future","data":{"a":[1,{"b":null}],"c":1e400},"seq":1}`, Other{Name: "x_future"}},
		{"ok reply", `{"status":"OK","seq_reply":1}`, Other{Name: "reply"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEvent([]byte(tc.frame))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestParseEventRefuses(t *testing.T) {
	post := func(from, to string) string { return strings.Replace(postedFrame, from, to, 1) }
	for _, tc := range []struct{ name, frame, want string }{
		{"not JSON", `{"event":`, "decoding a websocket frame"},
		{"trailing data", `{"event":"hello"} {}`, "decoding"},
		{"neither event nor status", `{"seq":1}`, "neither event nor status"},
		{"both", `{"event":"hello","status":"OK","seq_reply":1}`, "both"},
		{"case variant", `{"Event":"hello"}`, "neither event nor status"},
		{"duplicate name", `{"event":"hello","event":"posted"}`, "duplicate"},
		{"reply without seq_reply", `{"status":"OK"}`, "without seq_reply"},
		{"unknown status", `{"status":"MAYBE","seq_reply":1}`, "status"},
		{"post as an object", `{"event":"posted","data":{"post":{"id":"` + idPost + `"}}}`, "not a string holding JSON"},
		{"no post", `{"event":"posted","data":{"channel_type":"D"}}`, "data has no post"},
		{"post is not JSON", `{"event":"posted","data":{"post":"{not json"}}`, "decoding a post"},
		{"invalid UTF-8 in the frame", "{\"event\":\"typing\",\"data\":{\"x\":\"\xff\"}}", "UTF-8"},
		{"lone surrogate in the post", post(`approve`, `\\udc00`), "surrogate"},
		{"lone surrogate in the frame", post(`"sender_name":"@owner"`, `"sender_name":"\udc00"`), "surrogate"},
		{"huge number", post(`\"create_at\":1758096300000`, `\"create_at\":1e30`), "create_at"},
		{"fraction", post(`\"update_at\":1758096300000`, `\"update_at\":1758096300000.5`), "update_at"},
		{"number beyond int64", post(`\"edit_at\":0`, `\"edit_at\":9223372036854775808`), "edit_at"},
		{"negative time", post(`\"delete_at\":0`, `\"delete_at\":-1`), "negative"},
		{"string time", post(`\"create_at\":1758096300000`, `\"create_at\":\"1758096300000\"`), "create_at"},
		{"short id", post(`\"id\":\"`+idPost, `\"id\":\"abc`), "not a Mattermost id"},
		{"upper-case user id", post(`\"user_id\":\"`+idOwner, `\"user_id\":\"`+strings.ToUpper(idOwner)), "not a Mattermost id"},
		{"root id with a slash", post(`\"root_id\":\"`+idRoot, `\"root_id\":\"../../`+idRoot[6:]), "not a Mattermost id"},
		{"from_bot a number", post(`{\"disable_group_highlight\":true}`, `{\"from_bot\":1}`), "props.from_bot"},
		{"props a list", post(`{\"disable_group_highlight\":true}`, `[]`), "props"},
		{"channel_type a number", post(`"channel_type":"D"`, `"channel_type":4`), "channel_type"},
		{"broadcast elsewhere", post(`"channel_id":"`+idChannel+`","team_id"`, `"channel_id":"`+idRoot+`","team_id"`), "not the post's channel"},
		{"reaction without emoji", strings.Replace(reactionFrame, `\"emoji_name\":\"+1\"`, `\"emoji_name\":\"\"`, 1), "emoji"},
		{"reaction on no post", strings.Replace(reactionFrame, `\"post_id\":\"`+idPost+`\"`, `\"post_id\":null`, 1), "post id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseEvent([]byte(tc.frame))
			if err == nil {
				t.Fatalf("accepted as %#v", ev)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestParseEventFailReply(t *testing.T) {
	_, err := ParseEvent([]byte(`{"status":"FAIL","seq_reply":4,"error":{"id":"api.web_socket_router.bad_action.app_error","message":"Invalid websocket action.\r\nInjected: line","detailed_error":"","status_code":501}}`))
	var re *ReplyError
	if !errors.As(err, &re) || re.Seq != 4 || re.ID != "api.web_socket_router.bad_action.app_error" {
		t.Fatalf("%#v", err)
	}
	if want := "mattermost: websocket request 4 failed: Invalid websocket action.  Injected: line (api.web_socket_router.bad_action.app_error)"; err.Error() != want {
		t.Errorf("%q\nwant %q", err, want)
	}
}
