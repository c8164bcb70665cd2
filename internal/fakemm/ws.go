package fakemm

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/coder/websocket"
)

// sendQueue is how many frames may wait for a slow client; past it the
// connection is closed, as Mattermost's hub closes a connection whose send
// queue is full.
const sendQueue = 1024

// conn is one WebSocket. userID and seq are guarded by the Server's mu.
type conn struct {
	ws        *websocket.Conn
	out       chan []byte
	gone      chan struct{}
	closeOnce sync.Once
	userID    string // "" until authenticated
	seq       int64  // the next event's seq
}

// drop closes the connection; its goroutines end.
func (c *conn) drop() {
	c.closeOnce.Do(func() {
		close(c.gone)
		c.ws.CloseNow()
	})
}

// sendLocked queues a frame for the writer, or drops a connection whose
// queue is full.
func (s *Server) sendLocked(c *conn, b []byte) {
	select {
	case c.out <- b:
	default:
		c.drop()
		delete(s.sockets, c)
	}
}

// eventLocked queues an event for c with c's next seq, in the byte layout
// of model.WebSocketEvent's precomputed JSON ({"event": …, "data": …,
// "broadcast": …, "seq": n}, with those spaces).
func (s *Server) eventLocked(c *conn, event string, data, broadcast []byte) {
	ev, _ := json.Marshal(event)
	b := make([]byte, 0, len(data)+len(broadcast)+64)
	b = append(b, `{"event": `...)
	b = append(b, ev...)
	b = append(b, `, "data": `...)
	b = append(b, data...)
	b = append(b, `, "broadcast": `...)
	b = append(b, broadcast...)
	b = append(b, `, "seq": `...)
	b = strconv.AppendInt(b, c.seq, 10)
	b = append(b, '}')
	c.seq++
	s.sendLocked(c, b)
}

// wireBroadcast is model.WebsocketBroadcast as the server sends it.
type wireBroadcast struct {
	OmitUsers        map[string]bool `json:"omit_users"`
	UserID           string          `json:"user_id"`
	ChannelID        string          `json:"channel_id"`
	TeamID           string          `json:"team_id"`
	ConnectionID     string          `json:"connection_id"`
	OmitConnectionID string          `json:"omit_connection_id"`
}

// broadcastLocked sends an event of channel c to the authenticated
// connections of c's members (web_conn.go's ShouldSendEvent: a broadcast
// with a channel_id goes to the channel's members only), nothing while the
// server is down.
func (s *Server) broadcastLocked(c *channel, event string, data map[string]any) {
	if s.down {
		return
	}
	d, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	bc, _ := json.Marshal(wireBroadcast{ChannelID: c.id})
	for k := range s.sockets {
		if k.userID != "" && c.member(k.userID) {
			s.eventLocked(k, event, d, bc)
		}
	}
}

// postedData is the data of a posted event (app/notification.go's
// SendNotifications): the post as a JSON string, the channel's type and
// names, the sender's @username, and the mentioned users as a JSON string
// array, which for a direct channel holds the other member.
func (s *Server) postedData(c *channel, sender *User, p *Post) map[string]any {
	d := map[string]any{
		"channel_display_name": "@" + sender.Username,
		"channel_name":         c.name,
		"channel_type":         c.typ,
		"post":                 postJSON(p),
		"sender_name":          "@" + sender.Username,
		"set_online":           true,
		"team_id":              "",
	}
	if c.typ == "D" {
		for _, m := range c.members {
			if m != sender.ID {
				b, _ := json.Marshal([]string{m})
				d["mentions"] = string(b)
			}
		}
	}
	return d
}

// wsResponse is model.WebSocketResponse: a reply to a request.
type wsResponse struct {
	Status   string    `json:"status"`
	SeqReply int64     `json:"seq_reply,omitempty"`
	Error    *appError `json:"error,omitempty"`
}

// wsRequest is model.WebSocketRequest: what a client sends.
type wsRequest struct {
	Seq    int64          `json:"seq"`
	Action string         `json:"action"`
	Data   map[string]any `json:"data"`
}

// serveWebSocket upgrades, then reads the client's requests until the
// connection ends; a writer goroutine sends the queued frames.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, out: make(chan []byte, sendQueue), gone: make(chan struct{})}
	s.mu.Lock()
	if s.closed || s.down {
		s.mu.Unlock()
		ws.CloseNow()
		return
	}
	s.sockets[c] = true
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	var writer sync.WaitGroup
	writer.Go(func() { s.write(ctx, c) })
	defer func() {
		s.mu.Lock()
		if s.sockets[c] {
			delete(s.sockets, c)
			s.changedLocked()
		}
		s.mu.Unlock()
		c.drop()
		cancel()
		writer.Wait()
	}()
	ws.SetReadLimit(1 << 20)
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var req wsRequest
		if json.Unmarshal(b, &req) != nil {
			return
		}
		if !s.request(c, &req) {
			return
		}
	}
}

// request answers one client request (platform/websocket_router.go); false
// closes the connection, as the server does for a bad token.
func (s *Server) request(c *conn, req *wsRequest) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case req.Action == "":
		s.failLocked(c, req.Seq, "api.web_socket_router.no_action.app_error", "No websocket action.", http.StatusBadRequest)
	case req.Seq <= 0:
		s.failLocked(c, req.Seq, "api.web_socket_router.bad_seq.app_error", "Invalid sequence for WebSocket message.", http.StatusBadRequest)
	case req.Action == "authentication_challenge":
		if c.userID != "" {
			return true // already authenticated: the server ignores it
		}
		token, _ := req.Data["token"].(string)
		id, ok := s.tokens[token]
		if !ok || s.down || !s.sockets[c] {
			return false
		}
		c.userID = id
		// HubRegister queues hello (seq 0) before the router sends the
		// reply, so a client sees hello first.
		hello, _ := json.Marshal(map[string]any{"connection_id": newID(), "server_version": "10.5.0.0.fakemm.false"})
		bc, _ := json.Marshal(wireBroadcast{UserID: id})
		s.eventLocked(c, "hello", hello, bc)
		reply, _ := json.Marshal(wsResponse{Status: "OK", SeqReply: req.Seq})
		s.sendLocked(c, reply)
		s.changedLocked()
	case c.userID == "":
		s.failLocked(c, req.Seq, "api.web_socket_router.not_authenticated.app_error", "No websocket session.", http.StatusUnauthorized)
	default:
		s.failLocked(c, req.Seq, "api.web_socket_router.bad_action.app_error", "Invalid websocket action.", http.StatusNotImplemented)
	}
	return true
}

// failLocked queues a FAIL reply (model.NewWebSocketError).
func (s *Server) failLocked(c *conn, seq int64, id, msg string, status int) {
	b, _ := json.Marshal(wsResponse{Status: "FAIL", SeqReply: seq,
		Error: &appError{ID: id, Message: msg, StatusCode: status}})
	s.sendLocked(c, b)
}

// write sends c's queued frames until the connection is dropped.
func (s *Server) write(ctx context.Context, c *conn) {
	for {
		select {
		case <-c.gone:
			return
		case b := <-c.out:
			if c.ws.Write(ctx, websocket.MessageText, b) != nil {
				c.drop()
				return
			}
		}
	}
}
