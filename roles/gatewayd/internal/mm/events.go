package mm

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Event is one event from the WebSocket: Hello, Posted, PostEdited,
// ReactionAdded, ReactionRemoved, or Other for everything else (typing,
// status_change, channel_viewed, a reply to a request, ...).
type Event interface{ isEvent() }

// Hello is the server's greeting on a new authenticated connection.
type Hello struct{}

// Posted is a new post. ChannelType is the channel's type ("D" for a
// direct channel), from the event's channel_type.
type Posted struct {
	Post        Post
	ChannelType string
}

// PostEdited is a post whose message was edited (or patched).
type PostEdited struct{ Post Post }

// ReactionAdded is a reaction someone added to a post.
type ReactionAdded struct{ Reaction Reaction }

// ReactionRemoved is a reaction someone removed from a post.
type ReactionRemoved struct{ Reaction Reaction }

// Other is any event gatewayd does not read, by name; a successful reply to
// a request the client sent is Other{Name: "reply"}.
type Other struct{ Name string }

func (Hello) isEvent()           {}
func (Posted) isEvent()          {}
func (PostEdited) isEvent()      {}
func (ReactionAdded) isEvent()   {}
func (ReactionRemoved) isEvent() {}
func (Other) isEvent()           {}

// ReplyError is the server's FAIL reply to a request the client sent on the
// WebSocket (seq_reply is the request's seq).
type ReplyError struct {
	Seq     int64
	ID      string // Mattermost's error id, e.g. api.web_socket_router.not_authenticated.app_error
	Message string
}

func (e *ReplyError) Error() string {
	s := fmt.Sprintf("mattermost: websocket request %d failed", e.Seq)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.ID != "" {
		s += " (" + e.ID + ")"
	}
	return s
}

// wireFrame is everything the server sends on the WebSocket: an event
// (model.WebSocketEvent: event, data, broadcast, seq) or a reply
// (model.WebSocketResponse: status, seq_reply, data, error).
type wireFrame struct {
	Event     string                    `json:"event"`
	Data      map[string]jsontext.Value `json:"data"`
	Broadcast *struct {
		ChannelID string `json:"channel_id"`
	} `json:"broadcast"`
	Seq      *int64 `json:"seq"`
	Status   string `json:"status"`
	SeqReply *int64 `json:"seq_reply"`
	Error    *struct {
		ID      string `json:"id"`
		Message string `json:"message"`
	} `json:"error"`
}

// frame is a parsed frame: an event with its seq (hasSeq false when the
// server sent none), or a reply to request replySeq.
type frame struct {
	ev       Event
	seq      int64
	hasSeq   bool
	reply    bool
	replySeq int64
}

// errNoFrame is a frame that is neither an event nor a reply.
var errNoFrame = errors.New("mattermost: websocket frame has neither event nor status")

// ParseEvent reads one WebSocket frame. The post of posted and post_edited
// and the reaction of reaction_added and reaction_removed are JSON strings
// holding JSON, decoded and checked like the REST answers. A reply with
// status OK is Other{Name: "reply"}; a reply with status FAIL is a
// *ReplyError.
func ParseEvent(b []byte) (Event, error) {
	f, err := parseFrame(b)
	if err != nil {
		return nil, err
	}
	return f.ev, nil
}

func parseFrame(b []byte) (frame, error) {
	var w wireFrame
	if err := decodeJSON(b, &w); err != nil {
		return frame{}, fmt.Errorf("mattermost: decoding a websocket frame: %w", err)
	}
	switch {
	case w.Event != "" && w.Status != "":
		return frame{}, errors.New("mattermost: websocket frame is both an event and a reply")
	case w.Status != "":
		return parseReply(&w)
	case w.Event == "":
		return frame{}, errNoFrame
	}
	f := frame{}
	if w.Seq != nil {
		f.seq, f.hasSeq = *w.Seq, true
	}
	var err error
	f.ev, err = parseData(&w)
	if err != nil {
		return frame{}, fmt.Errorf("mattermost: %s event: %w", clip(w.Event), err)
	}
	return f, nil
}

func parseReply(w *wireFrame) (frame, error) {
	if w.SeqReply == nil {
		return frame{}, errors.New("mattermost: websocket reply without seq_reply")
	}
	switch w.Status {
	case "OK":
		return frame{ev: Other{Name: "reply"}, reply: true, replySeq: *w.SeqReply}, nil
	case "FAIL":
		e := &ReplyError{Seq: *w.SeqReply}
		if w.Error != nil {
			e.ID, e.Message = clip(w.Error.ID), clipLine(w.Error.Message)
		}
		return frame{}, e
	}
	return frame{}, fmt.Errorf("mattermost: websocket reply with status %q", clip(w.Status))
}

// parseData reads the payload of the events gatewayd uses.
func parseData(w *wireFrame) (Event, error) {
	switch w.Event {
	case "hello":
		return Hello{}, nil
	case "posted", "post_edited":
		p, err := stringPayload(w.Data, "post", decodePost)
		if err != nil {
			return nil, err
		}
		if err := sameChannel(w, p.ChannelID); err != nil {
			return nil, err
		}
		if w.Event == "post_edited" {
			return PostEdited{Post: p}, nil
		}
		var ct string
		if v, ok := w.Data["channel_type"]; ok {
			if err := json.Unmarshal(v, &ct); err != nil {
				return nil, fmt.Errorf("channel_type: %w", err)
			}
		}
		return Posted{Post: p, ChannelType: ct}, nil
	case "reaction_added", "reaction_removed":
		r, err := stringPayload(w.Data, "reaction", decodeReaction)
		if err != nil {
			return nil, err
		}
		if w.Event == "reaction_added" {
			return ReactionAdded{Reaction: r}, nil
		}
		return ReactionRemoved{Reaction: r}, nil
	}
	return Other{Name: clip(w.Event)}, nil
}

// stringPayload decodes data[name], a JSON string whose content is JSON,
// with decode.
func stringPayload[T any](data map[string]jsontext.Value, name string, decode func([]byte) (T, error)) (T, error) {
	var zero T
	v, ok := data[name]
	if !ok {
		return zero, fmt.Errorf("data has no %s", name)
	}
	var s string
	if v.Kind() != '"' {
		return zero, fmt.Errorf("data.%s is %s, not a string holding JSON", name, v.Kind())
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return zero, fmt.Errorf("data.%s: %w", name, err)
	}
	return decode([]byte(s))
}

// sameChannel refuses a post event whose broadcast names another channel
// than its post: the server routes events by the broadcast, and gatewayd
// by the post.
func sameChannel(w *wireFrame, channelID string) error {
	if w.Broadcast != nil && w.Broadcast.ChannelID != "" && w.Broadcast.ChannelID != channelID {
		return fmt.Errorf("broadcast channel %q is not the post's channel %s", clip(w.Broadcast.ChannelID), channelID)
	}
	return nil
}
