package harness_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/harness"
	"boxmaker/internal/syncbuf"
)

var sessionLine = regexp.MustCompile(`\[session (chat-[0-9a-z-]+), epoch`)

// TestKillingARoleMidTurn kills each role with SIGKILL while a turn waits
// for an approval. Nothing half-written is left: after a restart the audit
// log verifies, loopd loads the session's log, and the session continues.
func TestKillingARoleMidTurn(t *testing.T) {
	for _, role := range []string{"brokerd", "loopd", "inferproxy"} {
		t.Run(role, func(t *testing.T) {
			h, _ := start(t, 120000)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out syncbuf.Buffer
			done := make(chan error, 1)
			go func() { done <- h.Bxctl(ctx, nil, &out, &out, "chat", "--say", "What do my notes say?") }()
			id := pendingApproval(t, h)
			session := sessionLine.FindStringSubmatch(out.String())
			if session == nil {
				t.Fatalf("no session line:\n%s", out.String())
			}
			if err := h.Kill(role); err != nil {
				t.Fatal(err)
			}
			switch role {
			case "brokerd":
				// loopd's call fails as "the tool broker is unavailable",
				// the model reads that, and the turn ends with a reply.
				if err := <-done; err != nil || !strings.Contains(out.String(), "the tool broker is unavailable") {
					t.Fatalf("chat: %v\n%s", err, out.String())
				}
			case "loopd":
				if err := <-done; err == nil {
					t.Fatalf("chat went on without loopd:\n%s", out.String())
				}
			case "inferproxy":
				// The approval still runs; the model can't be asked again,
				// so the turn fails cleanly.
				var a syncbuf.Buffer
				if err := h.Bxctl(ctx, nil, &a, &a, "approve", id); err != nil {
					t.Fatalf("approve: %v\n%s", err, a.String())
				}
				if err := <-done; err == nil || !strings.Contains(out.String(), "turn failed") {
					t.Fatalf("chat: %v\n%s", err, out.String())
				}
			}
			if err := h.StartRole(ctx, role); err != nil {
				t.Fatal(err)
			}
			verify(t, h)
			var next syncbuf.Buffer
			if err := h.Bxctl(ctx, nil, &next, &next, "chat", "--session", session[1], "--say", "List the scratch folder."); err != nil ||
				!strings.Contains(next.String(), "todo.txt") {
				t.Fatalf("the session did not continue: %v\n%s", err, next.String())
			}
			verify(t, h)
		})
	}
}

// pendingApproval waits for one pending approval and returns its id.
func pendingApproval(t *testing.T, h *harness.Harness) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var out syncbuf.Buffer
		if err := h.Bxctl(context.Background(), nil, &out, &out, "approvals"); err == nil && strings.Contains(out.String(), "grant notes-read") {
			return strings.Fields(out.String())[0]
		}
	}
	t.Fatal("no approval became pending")
	return ""
}
