package jobrun

import (
	"context"
	"errors"
	"fmt"
	"net"

	"boxmaker/wire"
)

// say starts session id on loopd's jobs socket with text and waits for the
// turn to end. It returns the reply, or an error saying why there is none:
// loopd unreachable, a failed turn, or an answer that breaks the protocol.
// The session's first event must name id: loopd may not run the job in a
// session other than the one brokerd bound.
func say(ctx context.Context, socket string, id wire.SessionID, text string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return "", fmt.Errorf("loopd's jobs socket %s: %w", socket, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := wire.WriteEnvelope(conn, wire.Request(1, wire.Say{Session: &id, Text: text})); err != nil {
		return "", fmt.Errorf("sending to loopd: %w", err)
	}
	first := true
	for {
		env, err := wire.ReadEnvelope(conn)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("loopd's answer ended early: %w", err)
		}
		if werr, ok := env.Msg.(wire.WireError); ok {
			return "", fmt.Errorf("loopd refused the say: %s: %s", werr.Code, werr.Detail)
		}
		if env.ID != 1 {
			return "", fmt.Errorf("loopd answered request %d, not 1", env.ID)
		}
		switch ev := env.Msg.(type) {
		case wire.TurnSession:
			if !first || ev.Session != id {
				return "", fmt.Errorf("loopd ran the job in session %s, not %s", ev.Session, id)
			}
		case wire.TurnFailed:
			if first {
				return "", fmt.Errorf("loopd did not start the session: %s", ev.Message)
			}
			return "", fmt.Errorf("the turn failed: %s", ev.Message)
		case wire.TurnReply:
			if first {
				return "", errors.New("loopd replied without naming the session")
			}
			if !env.Final {
				return "", errors.New("loopd's reply was not its last word")
			}
			return ev.Content, nil
		default:
			if first {
				return "", fmt.Errorf("loopd began with %s, not the session", env.Msg.Kind())
			}
		}
		if env.Final {
			return "", fmt.Errorf("loopd ended the turn with %s", env.Msg.Kind())
		}
		first = false
	}
}
