package mm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// secretToken looks like a Mattermost token and is valid as a user id, so
// that a server or a caller that puts it where an id belongs is covered.
const secretToken = "s3cr3tt0k3nabcdefghijklmno"

// echo answers every request with status and a body that quotes the token
// it was sent, the way a careless proxy or server might.
func echo(status int, body string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.WriteHeader(status)
		fmt.Fprint(w, strings.ReplaceAll(body, "TOKEN", tok))
	}))
}

// noToken fails when any rendering of err, or of an error it wraps,
// holds the token.
func noToken(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, secretToken) {
				t.Errorf("%s: the token is in %q", what, s)
				return
			}
		}
	}
}

func TestTokenNeverInErrors(t *testing.T) {
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Cleanup(cancel)
		return c
	}
	client := func(url string) *Client {
		c, err := New(url, secretToken)
		if err != nil {
			t.Fatal(err)
		}
		c.RequestTimeout = 300 * time.Millisecond
		return c
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	w := newWorld(t)

	cases := []struct {
		name string
		call func() error
	}{
		{"token in the URL's user info", func() error { _, err := New("https://bot:"+secretToken+"@chat.example.net", secretToken); return err }},
		{"token in the URL's path", func() error { _, err := New("https://chat.example.net/"+secretToken, secretToken); return err }},
		{"token in the URL's query", func() error {
			_, err := New("https://chat.example.net?access_token="+secretToken, secretToken)
			return err
		}},
		{"token in a URL that does not parse", func() error { _, err := New("https://chat.example.net:"+secretToken, secretToken); return err }},
		{"token with a newline", func() error { _, err := New("https://chat.example.net", secretToken+"\n"); return err }},
		{"401 from the fake", func() error { _, err := client(w.s.URL()).Me(ctx()); return err }},
		{"server echoes the token in message and id", func() error {
			s := echo(401, `{"id":"bad.TOKEN","message":"token TOKEN is not valid","status_code":401}`)
			defer s.Close()
			_, err := client(s.URL).Me(ctx())
			return err
		}},
		{"server sends the token as the user's id", func() error {
			s := echo(200, `{"id":"TOKEN-x","username":"u"}`)
			defer s.Close()
			_, err := client(s.URL).Me(ctx())
			return err
		}},
		{"server answers another user: the token", func() error {
			s := echo(200, `{"id":"TOKEN","username":"u"}`)
			defer s.Close()
			_, err := client(s.URL).User(ctx(), idOwner)
			return err
		}},
		{"server sends bad JSON around the token", func() error {
			s := echo(200, `{"id":"TOKEN","username":`)
			defer s.Close()
			_, err := client(s.URL).Me(ctx())
			return err
		}},
		{"connection refused", func() error { _, err := client(refused).Me(ctx()); return err }},
		{"timeout", func() error { _, err := client(hang.URL).Me(ctx()); return err }},
		{"the token passed as an id", func() error { _, err := client(w.s.URL()).User(ctx(), secretToken+"/x"); return err }},
		{"the token passed as a post id", func() error { _, err := client(w.s.URL()).PatchPost(ctx(), secretToken+"!", "m"); return err }},
		{"server down", func() error {
			w.s.SetDown(true)
			defer w.s.SetDown(false)
			_, err := w.client(t, w.bot.Token).Me(ctx())
			if err != nil && strings.Contains(err.Error(), w.bot.Token) {
				return errors.New("holds the bot's token: " + secretToken)
			}
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { noToken(t, tc.name, tc.call()) })
	}
	for _, tc := range []struct {
		name string
		srv  func() *httptest.Server
	}{
		{"websocket refused by the fake", func() *httptest.Server { return nil }},
		{"websocket FAIL reply echoing the token", func() *httptest.Server {
			return stubWS(t, func(ctx context.Context, c *websocket.Conn) {
				send(ctx, c, `{"status":"FAIL","seq_reply":1,"error":{"id":"`+secretToken+`","message":"`+secretToken+`"}}`)
				<-ctx.Done()
			})
		}},
		{"websocket upgrade refused with the token in the body", func() *httptest.Server { return echo(403, `{"message":"TOKEN"}`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := w.s.URL()
			if s := tc.srv(); s != nil {
				url = s.URL
			}
			c := client(url)
			c.Backoff = Backoff{Base: time.Hour, Cap: time.Hour}
			r := newRecorder()
			listen(t, c, r)
			r.waitFor(t, "disconnected", 1)
			_, errs := r.snapshot()
			noToken(t, tc.name, errs[0])
		})
	}
}

func TestClientPrintsNoToken(t *testing.T) {
	c, err := New("https://chat.example.net:8065", secretToken)
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%T"} {
		for _, v := range []any{c, *c, []*Client{c}, struct{ C *Client }{c}} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, secretToken) || strings.Contains(s, fmt.Sprintf("%x", secretToken)) {
				t.Errorf("Sprintf(%q, %T) = %s", verb, v, s)
			}
		}
	}
	if got := fmt.Sprint(c); got != "mattermost client for https://chat.example.net:8065" {
		t.Errorf("Sprint = %q", got)
	}
}
