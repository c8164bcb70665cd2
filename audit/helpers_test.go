package audit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// day0 is the fixed morning most tests start on.
var day0 = time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC)

func sid(s string) wire.SessionID {
	id, err := wire.NewSessionID(s)
	if err != nil {
		panic(err)
	}
	return id
}

func strp(s string) *string { return &s }

func decision(session string, call uint64, outcome wire.DecisionRecord) wire.DecisionEvent {
	h := wire.Sha256([]byte("grant " + session))
	return wire.DecisionEvent{Session: sid(session), Call: wire.CallID(call), Tool: "read_file",
		Arguments: fmt.Sprintf(`{"path":"/home/kyle/notes/%d.md"}`, call), Outcome: outcome,
		Grant: strp("notes-read"), GrantSha256: &h, Taint: wire.Private}
}

func approval(session string, call, decisionSeq uint64) wire.ApprovalEvent {
	return wire.ApprovalEvent{Session: sid(session), Call: wire.CallID(call), Decision: decisionSeq,
		Answer: wire.Approved, By: strp("bxctl"), Outcome: wire.OutcomeAllowed{}}
}

func result(session string, call, decisionSeq uint64) wire.ResultEvent {
	return wire.ResultEvent{Session: sid(session), Call: wire.CallID(call), Decision: decisionSeq,
		Status: wire.StatusResult, Class: wire.Private, Bytes: 12, Sha256: wire.Sha256([]byte("hello world\n")),
		TaintAfter: wire.Private}
}

// formatted is FormatReport's output.
func formatted(t testing.TB, rep ChainReport) string {
	t.Helper()
	var b strings.Builder
	if _, err := FormatReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
