package mm

import (
	"strings"
	"testing"
)

// listPost is a post of a post list, in model.Post's JSON.
func listPost(id, root string, createAt string) string {
	return `{"id":"` + id + `","create_at":` + createAt + `,"update_at":` + createAt + `,"edit_at":0,"delete_at":0,"is_pinned":false,"user_id":"` + idOwner + `","channel_id":"` + idChannel + `","root_id":"` + root + `","original_id":"","message":"m","type":"","props":{},"hashtags":"","pending_post_id":"","reply_count":0,"last_reply_at":0,"participants":null,"metadata":{}}`
}

const (
	idA = "aaaaaaaaaaaaaaaaaaaaaaaaa1"
	idB = "bbbbbbbbbbbbbbbbbbbbbbbbb2"
	idC = "ccccccccccccccccccccccccc3"
)

func TestDecodePostList(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string // want: the ids in order, or "error: <text>"
	}{
		{"newest first, sorted back", `{"order":["` + idC + `","` + idB + `","` + idA + `"],"posts":{"` + idA + `":` + listPost(idA, "", "1") + `,"` + idB + `":` + listPost(idB, "", "2") + `,"` + idC + `":` + listPost(idC, "", "3") + `},"next_post_id":"","prev_post_id":"","has_next":false}`, idA + " " + idB + " " + idC},
		{"a root in posts but not in order is left out", `{"order":["` + idB + `"],"posts":{"` + idA + `":` + listPost(idA, "", "1") + `,"` + idB + `":` + listPost(idB, idA, "2") + `}}`, idB},
		{"same time, ordered by id", `{"order":["` + idB + `","` + idA + `"],"posts":{"` + idA + `":` + listPost(idA, "", "5") + `,"` + idB + `":` + listPost(idB, "", "5") + `}}`, idA + " " + idB},
		{"an id twice in order", `{"order":["` + idA + `","` + idA + `"],"posts":{"` + idA + `":` + listPost(idA, "", "1") + `}}`, idA},
		{"empty", `{"order":[],"posts":{}}`, ""},
		{"null", `null`, ""},
		{"unknown members", `{"order":[],"posts":{},"first_inaccessible_post_time":0,"future":{"x":[1]}}`, ""},
		{"order names a missing post", `{"order":["` + idA + `"],"posts":{}}`, "error: not in posts"},
		{"key and id differ", `{"order":["` + idB + `"],"posts":{"` + idB + `":` + listPost(idA, "", "1") + `}}`, "error: has id"},
		{"duplicate key", `{"order":["` + idA + `"],"posts":{"` + idA + `":` + listPost(idA, "", "1") + `,"` + idA + `":` + listPost(idA, "", "1") + `}}`, "error: duplicate"},
		{"order of numbers", `{"order":[1],"posts":{}}`, "error: order"},
		{"posts a list", `{"order":[],"posts":[]}`, "error: posts"},
		{"a bad post", `{"order":["` + idA + `"],"posts":{"` + idA + `":` + listPost(idA, "", "1e99") + `}}`, "error: create_at"},
		{"a list", `[]`, "error: decoding a post list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			posts, err := decodePostList([]byte(tc.body))
			got := ids(posts)
			if err != nil {
				got = "error: " + err.Error()
			}
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want an error saying %q", got, want)
				}
			} else if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeReactions(t *testing.T) {
	r := func(user, post, emoji string) string {
		return `{"user_id":"` + user + `","post_id":"` + post + `","emoji_name":"` + emoji + `","create_at":1,"update_at":1,"delete_at":0,"remote_id":"","channel_id":"` + idChannel + `"}`
	}
	for _, tc := range []struct {
		body string
		n    int // -1: an error
	}{
		{`null`, 0},
		{`[]`, 0},
		{`[` + r(idOwner, idPost, "+1") + `,` + r(idBot, idPost, "white_check_mark") + `]`, 2},
		{`[` + r(idOwner, idPost, "") + `]`, -1},
		{`[` + r(idOwner, idPost, strings.Repeat("x", 65)) + `]`, -1},
		{`[` + r("", idPost, "+1") + `]`, -1},
		{`[null]`, -1},
		{`{}`, -1},
		{`[` + r(idOwner, idPost, "+1") + `] x`, -1},
	} {
		rs, err := decodeReactions([]byte(tc.body))
		switch {
		case tc.n < 0 && err == nil:
			t.Errorf("%s: accepted %+v", tc.body, rs)
		case tc.n >= 0 && (err != nil || len(rs) != tc.n):
			t.Errorf("%s: %d reactions, %v; want %d", tc.body, len(rs), err, tc.n)
		}
	}
}

func TestDecodeUserAndChannel(t *testing.T) {
	u, err := decodeUser([]byte(`{"id":"` + idBot + `","create_at":1,"username":"boxbot","auth_data":"","email":"","is_bot":true,"bot_description":"x","timezone":{"useAutomaticTimezone":"true"},"props":{"a":"b"},"notify_props":{}}`))
	if err != nil || u != (User{ID: idBot, Username: "boxbot", IsBot: true}) {
		t.Errorf("user: %+v, %v", u, err)
	}
	for _, bad := range []string{`{"id":"` + idBot + `"}`, `{"id":"x","username":"a"}`, `{"id":"` + idBot + `","username":"a","is_bot":"true"}`, `{"id":"` + idBot + `","Username":"a"}`} {
		if u, err := decodeUser([]byte(bad)); err == nil {
			t.Errorf("user %s accepted as %+v", bad, u)
		}
	}
	c, err := decodeChannel([]byte(`{"id":"` + idChannel + `","type":"D","name":"` + idBot + `__` + idOwner + `","scheme_id":null,"props":null}`))
	if err != nil || c != (Channel{ID: idChannel, Type: "D"}) {
		t.Errorf("channel: %+v, %v", c, err)
	}
	if c, err := decodeChannel([]byte(`{"id":"` + idChannel + `"}`)); err == nil {
		t.Errorf("a channel without a type: %+v", c)
	}
}
