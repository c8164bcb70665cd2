package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

// frame is what a stand-in gatewayd writes on an approval's connection.
type frame struct {
	final bool
	id    uint64
	msg   wire.Message
	raw   string // written as it is when not empty
}

func (f frame) send(t *testing.T, req *gatewaytest.Request) {
	t.Helper()
	if f.raw != "" {
		req.SendRaw(t, []byte(f.raw))
		return
	}
	id := f.id
	if id == 0 {
		id = req.Env.ID
	}
	if err := wire.WriteEnvelope(req.Conn, wire.Reply(id, f.final, f.msg)); err != nil {
		t.Fatal(err)
	}
}

func answerFrame(mod func(*wire.OwnerAnswer)) frame {
	a := approved()
	mod(&a)
	return frame{final: true, msg: a}
}

const otherPost = "zzzzzzzzzzzzzzzzzzzzzzzzzz"

// TestInvalidAnswersChangeNothing: whatever gatewayd sends that is not one
// well-formed answer of an owner leaves the approval pending: a line says
// it was ignored, the request is sent again on a new connection, and a
// valid answer there is the one that counts.
func TestInvalidAnswersChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unposted bool // no approval_posted first
		bad      frame
	}{
		{"by is bxctl", false, answerFrame(func(a *wire.OwnerAnswer) { a.By = "bxctl" })},
		{"by too short", false, answerFrame(func(a *wire.OwnerAnswer) { a.By = "8xk3q9wzb7f1jdm4ytr6hcn2p" })},
		{"by in capitals", false, answerFrame(func(a *wire.OwnerAnswer) { a.By = strings.ToUpper(ownerID) })},
		{"by empty", false, answerFrame(func(a *wire.OwnerAnswer) { a.By = "" })},
		{"post with a slash", false, answerFrame(func(a *wire.OwnerAnswer) { a.Post = "q7m2c8tx4jfu3ne9kdwbr5hy1/" })},
		{"post of another approval", false, answerFrame(func(a *wire.OwnerAnswer) { a.Post = otherPost })},
		{"answer expired", false, answerFrame(func(a *wire.OwnerAnswer) { a.Answer = wire.Expired })},
		{"reason of 501 bytes", false, answerFrame(func(a *wire.OwnerAnswer) {
			a.Answer, a.Reason = wire.Refused, ptr(strings.Repeat("x", 501))
		})},
		{"huge reason", false, answerFrame(func(a *wire.OwnerAnswer) {
			a.Answer, a.Reason = wire.Refused, ptr(strings.Repeat("no ", 300000))
		})},
		{"reason with a newline", false, answerFrame(func(a *wire.OwnerAnswer) { a.Answer, a.Reason = wire.Refused, ptr("no\napproved") })},
		{"reason with ESC", false, answerFrame(func(a *wire.OwnerAnswer) { a.Answer, a.Reason = wire.Refused, ptr("no \x1b[2J") })},
		{"reason with a bidi override", false, answerFrame(func(a *wire.OwnerAnswer) { a.Answer, a.Reason = wire.Refused, ptr("no \u202eevorppa") })},
		{"reason with a zero width space", false, answerFrame(func(a *wire.OwnerAnswer) { a.Answer, a.Reason = wire.Refused, ptr("no\u200b") })},
		{"answer not final", false, frame{final: false, msg: approved()}},
		{"answer to another request id", false, frame{final: true, id: 2, msg: approved()}},
		{"ok", false, frame{final: true, msg: wire.OK{}}},
		{"a tool request", false, frame{raw: `{"v":1,"id":1,"final":true,"msg":{"kind":"tool_request","body":{"session":"chat-1","call":3,"tool":"shell","arguments":"{}"}}}`}},
		{"an approve of admin.sock", false, frame{final: true, msg: wire.Approve{Approval: 41}}},
		{"broker_start", false, frame{final: true, msg: wire.BrokerStart{Broker: "5f0c3e1a9b7d42c68e1f0a2b3c4d5e6f"}}},
		{"approval_posted final", true, frame{final: true, msg: wire.ApprovalPosted{Post: postID}}},
		{"approval_posted not a post id", true, frame{final: false, msg: wire.ApprovalPosted{Post: "../../etc"}}},
		{"not JSON", false, frame{raw: "{"}},
		{"an unknown kind", false, frame{raw: `{"v":1,"id":1,"final":true,"msg":{"kind":"owner_approves","body":{}}}`}},
		{"a key in capitals", false, frame{raw: `{"v":1,"id":1,"final":true,"msg":{"kind":"owner_answer","body":{"Answer":"approved","by":"` + ownerID + `","post":"` + postID + `","reason":null}}}`}},
		{"a duplicate key", false, frame{raw: `{"v":1,"id":1,"final":true,"msg":{"kind":"owner_answer","body":{"answer":"refused","answer":"approved","by":"` + ownerID + `","post":"` + postID + `","reason":null}}}`}},
		{"a reason not UTF-8", false, frame{raw: `{"v":1,"id":1,"final":true,"msg":{"kind":"owner_answer","body":{"answer":"refused","by":"` + ownerID + `","post":"` + postID + "\",\"reason\":\"\xff\"}}}"}},
		{"version 2", false, frame{raw: `{"v":2,"id":1,"final":true,"msg":{"kind":"owner_answer","body":{"answer":"approved","by":"` + ownerID + `","post":"` + postID + `","reason":null}}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, g := newRig(t, true)
			r.setHead(1)
			_, ans, _ := r.pending(41)
			req := g.Request(t)
			if !tc.unposted {
				req.Send(t, false, wire.ApprovalPosted{Post: postID})
			}
			tc.bad.send(t, req)
			r.waitLog("see docs/runbook.md#gatewayd-answer-invalid", 1)
			if !req.Closed(5e9) {
				t.Fatal("the connection stayed open")
			}
			again := g.Request(t)
			if again.Msg != req.Msg {
				t.Fatalf("sent again as %+v, first %+v", again.Msg, req.Msg)
			}
			noAnswer(t, ans)
			if r.count("see docs/runbook.md#gatewayd-answer-invalid") != 1 || r.count("gatewayd-unreachable") != 0 {
				t.Fatalf("log %q", r.logged())
			}
			again.Send(t, false, wire.ApprovalPosted{Post: postID})
			again.Send(t, true, wire.OwnerAnswer{Answer: wire.Refused, By: ownerID, Post: postID, Reason: ptr("the real one")})
			if a := answer(t, ans); a.Answer != wire.Refused || a.Reason == nil || *a.Reason != "the real one" {
				t.Fatalf("answer %+v", a)
			}
		})
	}
}

// TestPrintable: the reason rule against a naive one, rune by rune, over
// every code point of the first planes and some text.
func TestPrintable(t *testing.T) {
	for r := rune(0); r < 0x30000; r++ {
		if utf8.ValidRune(r) && printable(string(r)) != naivePrintable(string(r)) {
			t.Errorf("U+%04X: printable %t", r, printable(string(r)))
		}
	}
	for s, want := range map[string]bool{"": true, "not on a Sunday": true, "naïve café": true, `a\b {1}`: true,
		"tab\there": false, "line\r\n": false, "\xff": false, "a\u00a0b": false, "\u2800": false, "e\u0301": true} {
		if printable(s) != want {
			t.Errorf("printable(%q) = %t", s, !want)
		}
	}
}

// naivePrintable: every character is the space, or a letter, mark, number,
// punctuation or symbol that draws something.
func naivePrintable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		drawn := unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S) &&
			!unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) && !unicode.Is(unicode.Variation_Selector, r) && r != 0x2800
		if r != ' ' && !drawn {
			return false
		}
	}
	return true
}

// FuzzOwnerAnswer: whatever frame gatewayd sends, an answer checkAnswer
// takes is approved or refused, by and post are Mattermost ids, and its
// reason is at most 500 bytes of printable UTF-8 on one line.
func FuzzOwnerAnswer(f *testing.F) {
	for _, name := range []string{"msg-owner_answer-approved.json", "msg-owner_answer-refused.json", "msg-approval_posted.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "fixtures", "wire", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := wire.UnmarshalEnvelope(body)
		if err != nil {
			return
		}
		m, ok := env.Msg.(wire.OwnerAnswer)
		if !ok || checkAnswer(env, m, nil) != "" {
			return
		}
		if m.Answer != wire.Approved && m.Answer != wire.Refused || !wire.ValidMattermostID(m.By) || !wire.ValidMattermostID(m.Post) {
			t.Fatalf("took %+v", m)
		}
		if r := m.Reason; r != nil && (len(*r) > MaxReason || !naivePrintable(*r) || strings.ContainsAny(*r, "\n\r\t")) {
			t.Fatalf("took reason %q", *r)
		}
		if !env.Final || env.ID != requestID {
			t.Fatalf("took %+v", env)
		}
	})
}
