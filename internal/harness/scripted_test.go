package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/harness"
)

// TestScriptedCheck is M3a §12's scripted check: an ask grant for
// read_file; a chat under a terminal asks the model to read a file there;
// the approval block appears; y approves it; the container runs and the
// model receives the content; the audit log verifies with Decision,
// Approval and Result records. Then the same for a refused approval.
func TestScriptedCheck(t *testing.T) {
	h, _ := start(t, 120000)
	term := chat(t, h)
	at := term.expect(0, "you> ")
	term.typeLine("What do my notes say?")
	at = term.expect(at, "grant notes-read  taint private")
	at = term.expect(at, `read_file {"path":"`+h.Notes()+`/today.md"}`)
	at = term.expect(at, "approve ")
	at = term.expect(at, "? [y/N] ")
	term.typeLine("y")
	at = term.expect(at, "runs")
	at = term.expect(at, "> - Water the plants.")
	if got := kinds(events(t, h)); got != "decision:ask approval:approved result:result" {
		t.Fatalf("audit events: %s", got)
	}

	at = term.expect(at, "you> ")
	term.typeLine("Read my notes again.")
	at = term.expect(at, "? [y/N] ")
	term.typeLine("n")
	at = term.expect(at, "refused ")
	term.expect(at, "> Denied: the owner refused this call.")
	if got := kinds(events(t, h)); got != "decision:ask approval:approved result:result decision:ask approval:refused" {
		t.Fatalf("audit events: %s", got)
	}
	verify(t, h)
	noLeftovers(t, h)
}

// noLeftovers fails unless every container brokerd made for a call is
// gone (those made ahead for calls to come may wait: LeftoversOfCalls).
// brokerd removes a call's container just after answering, so one may take
// a moment; one still there after 10 s is left behind.
func noLeftovers(t *testing.T, h *harness.Harness) {
	t.Helper()
	var n int
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n, err = h.LeftoversOfCalls(); err == nil && n == 0 {
			return
		}
	}
	t.Fatalf("containers left: %d %v", n, err)
}

// TestExpiredApprovalAndDenials: an approval nobody answers expires and the
// model reads its denial text; the auto grant runs a real container; a call
// with no grant is denied.
func TestExpiredApprovalAndDenials(t *testing.T) {
	h, _ := start(t, 1500)
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.Bxctl(ctx, nil, &out, &out, "chat", "--say", "What do my notes say?"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "> Denied: the approval request expired without an answer.") {
		t.Fatalf("chat:\n%s", out.String())
	}
	out.Reset()
	if err := h.Bxctl(ctx, nil, &out, &out, "chat", "--say", "List the scratch folder."); err != nil || !strings.Contains(out.String(), "todo.txt") {
		t.Fatalf("shell in the scratch folder: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := h.Bxctl(ctx, nil, &out, &out, "chat", "--say", "Fetch a web page for me."); err != nil ||
		!strings.Contains(out.String(), "> Denied: no grant allows this call.") {
		t.Fatalf("http_fetch: %v\n%s", err, out.String())
	}
	if got := kinds(events(t, h)); got != "decision:ask approval:expired decision:allowed result:result decision:no_grant" {
		t.Fatalf("audit events: %s", got)
	}
	verify(t, h)
	noLeftovers(t, h)
}
