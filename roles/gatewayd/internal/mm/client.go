package mm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
)

// MaxMessageRunes is the longest message Mattermost accepts in a post
// (model.PostMessageMaxRunesV2); CreatePost and PatchPost refuse a longer
// one before sending it, so the caller can split it.
const MaxMessageRunes = 16383

// Defaults for the Client's settings.
const (
	DefaultRequestTimeout   = 30 * time.Second
	DefaultPingInterval     = 30 * time.Second
	DefaultMaxResponseBytes = 16 << 20
	DefaultReadLimit        = 1 << 20
)

// maxErrorBody bounds what is read of an error response.
const maxErrorBody = 64 << 10

// maxToken bounds the token's length; Mattermost's are 26 characters.
const maxToken = 1024

// Client talks to one Mattermost server as one bot. Set its exported
// settings before the first call; the methods may then be called from any
// goroutine, and Listen from one.
type Client struct {
	// RequestTimeout bounds each REST request, the WebSocket's dial and its
	// authentication (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// PingInterval is how often the WebSocket is pinged; a pong missing
	// for as long ends the connection (default DefaultPingInterval).
	PingInterval time.Duration
	// MaxResponseBytes bounds a REST answer (default DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// ReadLimit bounds one WebSocket message (default DefaultReadLimit).
	ReadLimit int64
	// Backoff spaces the WebSocket's reconnections.
	Backoff Backoff

	base string // scheme://host[:port], nothing else
	// token returns the bot's token. It is a closure so that no fmt verb
	// can print it: fmt shows a func as an address, and reflection cannot
	// see what a closure holds, even for a Client value or a bad verb.
	token func() string
	hc    *http.Client
}

// New returns a client for the server at baseURL (http:// or https://,
// a host and an optional port, and nothing else) with the bot's token.
// Its errors never quote the token, nor a part of the URL that could hold
// one (user info, path, query, fragment).
func New(baseURL, token string) (*Client, error) {
	base, err := checkBaseURL(baseURL)
	if err != nil {
		return nil, scrubWith(err, token)
	}
	if err := checkToken(token); err != nil {
		return nil, err
	}
	// The default transport's proxy from the environment, TLS and
	// HTTP/2 (used for REST; the WebSocket's upgrade is HTTP/1.1 only);
	// each request's context carries its timeout.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &Client{
		base:  base,
		token: func() string { return token },
		hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			// The bot's token must not follow a redirect anywhere; a
			// redirect is an answer the caller sees, as a 3xx APIError.
			return http.ErrUseLastResponse
		}},
	}, nil
}

func checkBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("mattermost: the url is not a valid URL")
	}
	var bad string
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		bad = "does not start with http:// or https://"
	case u.Opaque != "":
		bad = "has no // after the scheme"
	case u.User != nil:
		bad = "has a user name or password (the token goes in token_file)"
	case u.Host == "" || u.Hostname() == "":
		bad = "has no host"
	case u.Path != "" || u.RawPath != "":
		bad = "has a path (not even / is allowed)"
	case u.RawQuery != "" || u.ForceQuery:
		bad = "has a query"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		bad = "has a fragment"
	}
	if bad != "" {
		return "", fmt.Errorf("mattermost: the url %s; it must be http:// or https://, a host and an optional port, and nothing else", bad)
	}
	return u.Scheme + "://" + u.Host, nil
}

func checkToken(token string) error {
	if token == "" {
		return errors.New("mattermost: the token is empty")
	}
	if len(token) > maxToken {
		return fmt.Errorf("mattermost: the token is longer than %d bytes", maxToken)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("mattermost: the token has a space, control or non-ASCII character at byte %d (a trailing newline in the token file?)", i)
		}
	}
	return nil
}

// String names the server, never the token.
func (c *Client) String() string { return "mattermost client for " + c.base }

// Format prints String for every verb, so that no verb of fmt can reach
// the Client's fields.
func (c *Client) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// Server returns the server's address, scheme://host[:port].
func (c *Client) Server() string { return c.base }

func (c *Client) requestTimeout() time.Duration {
	if c.RequestTimeout > 0 {
		return c.RequestTimeout
	}
	return DefaultRequestTimeout
}

// APIError is an answer of the server other than success: the request
// (method and URL; the token travels only in a header, so the URL never
// holds it), the HTTP status, and Mattermost's error id and message from
// the body when it sent them (the message with any copy of the token
// replaced, control characters removed and clipped).
type APIError struct {
	Method  string
	URL     string
	Status  int
	ID      string
	Message string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("mattermost: %s %s: %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.ID != "" {
		s += " (" + e.ID + ")"
	}
	return s
}

// do sends one REST request with body (nil for none) as JSON and returns
// the answer's body when the status is 2xx.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any) ([]byte, error) {
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("mattermost: %s %s: encoding the request: %w", method, target, err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.requestTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("mattermost: %s %s: %w", method, target, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token())
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, c.scrub(fmt.Errorf("mattermost: %s %s: %w", method, target, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.apiError(resp, method, target)
	}
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, c.scrub(fmt.Errorf("mattermost: %s %s: reading the answer: %w", method, target, err))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("mattermost: %s %s: the answer is over %d bytes", method, target, limit)
	}
	return b, nil
}

// apiError reads Mattermost's error body (model.AppError: id, message,
// detailed_error, request_id, status_code), if any.
func (c *Client) apiError(resp *http.Response, method, target string) error {
	e := &APIError{Method: method, URL: target, Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		ID      string `json:"id"`
		Message string `json:"message"`
	}
	if decodeJSON(b, &body) == nil {
		e.ID = clipLine(c.redact(body.ID))
		e.Message = clipLine(c.redact(body.Message))
	}
	return e
}

// redact replaces every copy of the token in text the server sent.
func (c *Client) redact(s string) string {
	return strings.ReplaceAll(s, c.token(), "[token]")
}

// scrub is the last guard before an error leaves the package: an error
// whose text holds the token is replaced by one whose text does not, and
// which does not wrap the original.
func (c *Client) scrub(err error) error { return scrubWith(err, c.token()) }

func scrubWith(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}

// clipLine makes server text fit on one line of a log: control and
// invalid characters become spaces, and it is cut at 200 characters.
func clipLine(s string) string {
	const max = 200
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// checkMessage refuses what Mattermost would refuse (or mangle) in a
// post's message, before it is sent.
func checkMessage(msg string) error {
	switch {
	case msg == "":
		return errors.New("mattermost: the message is empty")
	case !utf8.ValidString(msg):
		return errors.New("mattermost: the message is not valid UTF-8")
	case utf8.RuneCountInString(msg) > MaxMessageRunes:
		return fmt.Errorf("mattermost: the message has %d characters, over Mattermost's %d", utf8.RuneCountInString(msg), MaxMessageRunes)
	}
	return nil
}

// Me returns the bot's own user (GET /api/v4/users/me): gatewayd's check
// of the token at start.
func (c *Client) Me(ctx context.Context) (User, error) {
	b, err := c.do(ctx, http.MethodGet, "/api/v4/users/me", nil, nil)
	if err != nil {
		return User{}, err
	}
	u, err := decodeUser(b)
	if err != nil {
		return User{}, c.wrap(err, "GET", "/api/v4/users/me")
	}
	return u, nil
}

// User returns user id (GET /api/v4/users/{id}).
func (c *Client) User(ctx context.Context, id string) (User, error) {
	if err := checkID("user id", id); err != nil {
		return User{}, c.badArg(err)
	}
	b, err := c.do(ctx, http.MethodGet, "/api/v4/users/"+id, nil, nil)
	if err != nil {
		return User{}, err
	}
	u, err := decodeUser(b)
	if err == nil && u.ID != id {
		err = fmt.Errorf("asked for user %s, got %s", id, u.ID)
	}
	if err != nil {
		return User{}, c.wrap(err, "GET", "/api/v4/users/"+id)
	}
	return u, nil
}

// DirectChannel returns the direct channel between users a and b, creating
// it when it does not exist yet (POST /api/v4/channels/direct).
func (c *Client) DirectChannel(ctx context.Context, a, b string) (Channel, error) {
	for _, id := range []string{a, b} {
		if err := checkID("user id", id); err != nil {
			return Channel{}, c.badArg(err)
		}
	}
	body, err := c.do(ctx, http.MethodPost, "/api/v4/channels/direct", nil, []string{a, b})
	if err != nil {
		return Channel{}, err
	}
	ch, err := decodeChannel(body)
	if err == nil && ch.Type != "D" {
		err = fmt.Errorf("channel %s has type %q, not D", ch.ID, clip(ch.Type))
	}
	if err != nil {
		return Channel{}, c.wrap(err, "POST", "/api/v4/channels/direct")
	}
	return ch, nil
}

// CreatePost posts message in channelID, in the thread of rootID when it
// is not "" (POST /api/v4/posts).
func (c *Client) CreatePost(ctx context.Context, channelID, rootID, message string) (Post, error) {
	if err := checkID("channel id", channelID); err != nil {
		return Post{}, c.badArg(err)
	}
	if rootID != "" {
		if err := checkID("root id", rootID); err != nil {
			return Post{}, c.badArg(err)
		}
	}
	if err := checkMessage(message); err != nil {
		return Post{}, err
	}
	req := struct {
		ChannelID string `json:"channel_id"`
		RootID    string `json:"root_id"`
		Message   string `json:"message"`
	}{channelID, rootID, message}
	b, err := c.do(ctx, http.MethodPost, "/api/v4/posts", nil, req)
	if err != nil {
		return Post{}, err
	}
	p, err := decodePost(b)
	if err == nil && (p.ChannelID != channelID || p.RootID != rootID) {
		err = fmt.Errorf("posted to channel %s root %q, the server answered channel %s root %q", channelID, rootID, p.ChannelID, p.RootID)
	}
	if err != nil {
		return Post{}, c.wrap(err, "POST", "/api/v4/posts")
	}
	return p, nil
}

// PatchPost replaces the message of post postID (PUT
// /api/v4/posts/{id}/patch); the bot can patch only its own posts.
func (c *Client) PatchPost(ctx context.Context, postID, message string) (Post, error) {
	if err := checkID("post id", postID); err != nil {
		return Post{}, c.badArg(err)
	}
	if err := checkMessage(message); err != nil {
		return Post{}, err
	}
	req := struct {
		Message string `json:"message"`
	}{message}
	path := "/api/v4/posts/" + postID + "/patch"
	b, err := c.do(ctx, http.MethodPut, path, nil, req)
	if err != nil {
		return Post{}, err
	}
	p, err := decodePost(b)
	if err == nil && p.ID != postID {
		err = fmt.Errorf("patched post %s, the server answered post %s", postID, p.ID)
	}
	if err != nil {
		return Post{}, c.wrap(err, "PUT", path)
	}
	return p, nil
}

// PostsSince returns the posts of channelID created, edited, reacted to or
// deleted after since (milliseconds since 1970; it must be above 0, as the
// server answers since=0 with the newest page instead), sorted by CreateAt
// (GET /api/v4/channels/{id}/posts?since=). The server's test is
// update_at > since, strictly, and it answers at most 1,000 posts.
func (c *Client) PostsSince(ctx context.Context, channelID string, since int64) ([]Post, error) {
	if err := checkID("channel id", channelID); err != nil {
		return nil, c.badArg(err)
	}
	if since <= 0 {
		return nil, fmt.Errorf("mattermost: posts since %d: since must be above 0", since)
	}
	path := "/api/v4/channels/" + channelID + "/posts"
	b, err := c.do(ctx, http.MethodGet, path, url.Values{"since": {strconv.FormatInt(since, 10)}}, nil)
	if err != nil {
		return nil, err
	}
	posts, err := decodePostList(b)
	if err == nil {
		for _, p := range posts {
			if p.ChannelID != channelID {
				err = fmt.Errorf("post %s is in channel %s, not %s", p.ID, p.ChannelID, channelID)
				break
			}
		}
	}
	if err != nil {
		return nil, c.wrap(err, "GET", path)
	}
	return posts, nil
}

// Thread returns the whole thread post postID is in, its root first,
// sorted by CreateAt (GET /api/v4/posts/{id}/thread).
func (c *Client) Thread(ctx context.Context, postID string) ([]Post, error) {
	if err := checkID("post id", postID); err != nil {
		return nil, c.badArg(err)
	}
	path := "/api/v4/posts/" + postID + "/thread"
	b, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	posts, err := decodePostList(b)
	if err != nil {
		return nil, c.wrap(err, "GET", path)
	}
	return posts, nil
}

// Reactions returns the reactions on post postID (GET
// /api/v4/posts/{id}/reactions); none is an empty slice.
func (c *Client) Reactions(ctx context.Context, postID string) ([]Reaction, error) {
	if err := checkID("post id", postID); err != nil {
		return nil, c.badArg(err)
	}
	path := "/api/v4/posts/" + postID + "/reactions"
	b, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	rs, err := decodeReactions(b)
	if err == nil {
		for _, r := range rs {
			if r.PostID != postID {
				err = fmt.Errorf("a reaction on post %s is listed for post %s", r.PostID, postID)
				break
			}
		}
	}
	if err != nil {
		return nil, c.wrap(err, "GET", path)
	}
	return rs, nil
}

// wrap names the request an answer that did not decode came from.
func (c *Client) wrap(err error, method, path string) error {
	if err == nil {
		return nil
	}
	return c.scrub(fmt.Errorf("mattermost: %s %s%s: unusable answer: %w", method, c.base, path, err))
}

// badArg is an argument refused before anything is sent.
func (c *Client) badArg(err error) error { return c.scrub(fmt.Errorf("mattermost: %w", err)) }
