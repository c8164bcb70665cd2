package mm

import (
	"strings"
	"testing"

	"boxmaker/wire"

	"github.com/go-json-experiment/json"
)

// encodePost writes p back in model.Post's JSON, for the round trips.
func encodePost(t *testing.T, p Post) []byte {
	props := map[string]any{}
	if p.FromBot {
		props["from_bot"] = "true"
	}
	if p.FromWebhook {
		props["from_webhook"] = "true"
	}
	if p.FromPlugin {
		props["from_plugin"] = true
	}
	b, err := json.Marshal(map[string]any{"id": p.ID, "channel_id": p.ChannelID, "root_id": p.RootID,
		"user_id": p.UserID, "message": p.Message, "type": p.Type, "create_at": p.CreateAt,
		"update_at": p.UpdateAt, "edit_at": p.EditAt, "delete_at": p.DeleteAt, "props": props})
	if err != nil {
		t.Fatalf("re-encoding %+v: %v", p, err)
	}
	return b
}

// checkPost is what every accepted post must be.
func checkPost(t *testing.T, p Post) {
	if !wire.ValidMattermostID(p.ID) || !wire.ValidMattermostID(p.ChannelID) || !wire.ValidMattermostID(p.UserID) ||
		p.RootID != "" && !wire.ValidMattermostID(p.RootID) {
		t.Fatalf("accepted a post with a bad id: %+v", p)
	}
	if p.CreateAt < 0 || p.UpdateAt < 0 || p.EditAt < 0 || p.DeleteAt < 0 {
		t.Fatalf("accepted a negative time: %+v", p)
	}
	again, err := decodePost(encodePost(t, p))
	if err != nil || again != p {
		t.Fatalf("round trip of %+v: %+v, %v", p, again, err)
	}
}

func checkReaction(t *testing.T, r Reaction) {
	if !wire.ValidMattermostID(r.UserID) || !wire.ValidMattermostID(r.PostID) || r.EmojiName == "" || len(r.EmojiName) > maxEmojiName || r.CreateAt < 0 {
		t.Fatalf("accepted a bad reaction: %+v", r)
	}
}

var eventSeeds = []string{
	postedFrame,
	reactionFrame,
	strings.Replace(reactionFrame, "reaction_added", "reaction_removed", 1),
	strings.Replace(postedFrame, `"posted"`, `"post_edited"`, 1),
	strings.Replace(postedFrame, `{\"disable_group_highlight\":true}`, `{\"from_bot\":\"true\",\"attachments\":[{\"text\":\"x\"}]}`, 1),
	`{"event": "hello", "data": {"connection_id":"x","server_version":"10.5.0.0.0.false"}, "broadcast": {"omit_users":null,"user_id":"` + idBot + `","channel_id":"","team_id":""}, "seq": 0}`,
	`{"event":"typing","data":{"parent_id":"","user_id":"` + idOwner + `"},"broadcast":{"channel_id":"` + idChannel + `"},"seq":9}`,
	`{"event":"status_change","data":{"status":"online","user_id":"` + idOwner + `"},"broadcast":{"user_id":"` + idOwner + `"},"seq":2}`,
	`{"status":"OK","seq_reply":1}`,
	`{"status":"FAIL","seq_reply":1,"error":{"id":"api.web_socket_router.not_authenticated.app_error","message":"No websocket session.","status_code":401}}`,
	`{"event":"posted","data":{"post":"{\"id\":\"` + idPost + `\",\"nested\":{\"post\":\"{\\\"id\\\":1}\"}}"}}`,
}

func FuzzParseEvent(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := ParseEvent(b)
		if err != nil {
			if ev != nil {
				t.Fatalf("both an event %#v and an error %v", ev, err)
			}
			return
		}
		switch e := ev.(type) {
		case Posted:
			checkPost(t, e.Post)
		case PostEdited:
			checkPost(t, e.Post)
		case ReactionAdded:
			checkReaction(t, e.Reaction)
		case ReactionRemoved:
			checkReaction(t, e.Reaction)
		case Other:
			if e.Name == "" || len(e.Name) > 64+len("…") {
				t.Fatalf("Other name %q", e.Name)
			}
		case Hello:
		default:
			t.Fatalf("an event of type %T", ev)
		}
	})
}

// postSeeds are posts as the server sends them, and near misses.
var postSeeds = []string{
	strings.ReplaceAll(postPayload, `\"`, `"`),
	listPost(idA, "", "1758096300000"),
	listPost(idB, idA, "1758096300001"),
	`{"id":"` + idA + `","create_at":1,"update_at":2,"edit_at":0,"delete_at":0,"user_id":"` + idOwner + `","channel_id":"` + idChannel + `","root_id":"","message":"\u003cb\u003e","type":"system_join_channel","props":{"from_webhook":"true","override_username":"x","attachments":[]}}`,
	`{"id":"` + idA + `","create_at":1e3}`,
	`{"id":"` + idA + `","props":{"from_bot":false}}`,
}

func FuzzPost(f *testing.F) {
	for _, s := range postSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePost(b)
		if err != nil {
			if p != (Post{}) {
				t.Fatalf("a post %+v and an error %v", p, err)
			}
			return
		}
		checkPost(t, p)
	})
}

// FuzzPosts feeds the same bytes to the post list decoder (the answers of
// PostsSince and Thread) and to the reactions decoder.
func FuzzPosts(f *testing.F) {
	f.Add([]byte(`{"order":["` + idB + `","` + idA + `"],"posts":{"` + idA + `":` + listPost(idA, "", "1") + `,"` + idB + `":` + listPost(idB, idA, "2") + `},"next_post_id":"","prev_post_id":"","has_next":false,"first_inaccessible_post_time":0}`))
	f.Add([]byte(`{"order":[],"posts":{"` + idA + `":` + listPost(idA, "", "1") + `}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"user_id":"` + idOwner + `","post_id":"` + idPost + `","emoji_name":"+1","create_at":1758096301000,"update_at":1758096301000,"delete_at":0,"remote_id":"","channel_id":"` + idChannel + `"}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if posts, err := decodePostList(b); err == nil {
			seen := map[string]bool{}
			for i, p := range posts {
				checkPost(t, p)
				if seen[p.ID] {
					t.Fatalf("post %s twice", p.ID)
				}
				seen[p.ID] = true
				if i > 0 && (posts[i-1].CreateAt > p.CreateAt || posts[i-1].CreateAt == p.CreateAt && posts[i-1].ID > p.ID) {
					t.Fatalf("not sorted: %+v before %+v", posts[i-1], p)
				}
			}
		} else if posts != nil {
			t.Fatalf("posts %+v and an error %v", posts, err)
		}
		if rs, err := decodeReactions(b); err == nil {
			for _, r := range rs {
				checkReaction(t, r)
			}
		} else if rs != nil {
			t.Fatalf("reactions %+v and an error %v", rs, err)
		}
	})
}
