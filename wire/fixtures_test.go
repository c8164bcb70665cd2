package wire

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the fixtures in fixtures/wire from the cases in this file")

const fixtureDir = "../fixtures/wire"

// fixture is one golden file. Files named msg-* hold a whole envelope (a
// frame body); the others hold a bare value of the named type.
type fixture struct {
	name string
	v    any // an Envelope, or a pointer to the value to decode into
}

func str(s string) *string { return &s }
func u64(n uint64) *uint64 { return &n }

var (
	fxSession  = SessionID{"chat-1758096300"}
	fxTime     = Timestamp(1789632300000) // 2026-09-17T08:05:00.000Z
	fxExpires  = Timestamp(1789633200000) // 15 minutes later
	fxHash     = Sha256([]byte("boxmaker"))
	fxArgs     = `{"command":"rm -rf /home/kyle/scratch/build","cwd":"/home/kyle/scratch"}`
	fxReadArgs = `{"path":"/home/kyle/notes/<today>.md"}`
	fxBroker   = "5f0c3e1a9b7d42c68e1f0a2b3c4d5e6f"
	fxOwner    = "8xk3q9wzb7f1jdm4ytr6hcn2pa" // a Mattermost user id
	fxPost     = "q7m2c8tx4jfu3ne9kdwbr5hy1o" // a Mattermost post id
	// Issue 17: a job's session, and a note as written and as promoted.
	fxJobSession   = SessionID{"job-daily-digest-1789632300000"}
	fxNote         = NoteInfo{"n-1789632300000-1", "Kyle's \"style\"", 49, Private, true, fxSession, fxTime, nil, nil, fxHash}
	fxNotePromoted = NoteInfo{"n-1789632300000-2", "Weekly plan", 0, Secret, false, fxJobSession, fxTime, str("bxctl"), &fxExpires, fxHash}
)

func envelope(id uint64, final bool, m Message) *Envelope {
	e := Envelope{V: Version, ID: id, Final: final, Msg: m}
	return &e
}

// fixtures lists every message kind and variant the wire spec defines.
func fixtures() []fixture {
	fx := []fixture{
		{"msg-tool_request", envelope(7, true, ToolRequest{fxSession, 3, "shell", fxArgs})},
		{"msg-tool_response-pending_approval", envelope(7, false, PendingResponse{41, fxExpires})},
		{"msg-tool_response-result", envelope(7, true, ResultResponse{"# Notes\n\"quoted\" <b>&\u0001\u00e9", Private, true, false})},
		{"msg-tool_response-result-truncated", envelope(7, true, ResultResponse{"first part", Secret, false, true})},
		{"msg-tool_response-failed", envelope(7, true, FailedResponse{"the runner arrives in M3b"})},
		{"msg-approvals", envelope(1, true, Approvals{})},
		{"msg-approval_list", envelope(1, true, ApprovalList{[]PendingApproval{{41, fxSession, 3, "shell", fxArgs, "shell-scratch", Private, fxTime, fxExpires}}})},
		{"msg-approval_list-empty", envelope(1, true, ApprovalList{[]PendingApproval{}})},
		{"msg-approve", envelope(2, true, Approve{41})},
		{"msg-approve_result-allowed", envelope(2, true, ApproveResult{OutcomeAllowed{}})},
		{"msg-approve_result-ask", envelope(2, true, ApproveResult{OutcomeAsk{}})},
		{"msg-approve_result-denied", envelope(2, true, ApproveResult{OutcomeDenied{NoGrant}})},
		{"msg-refuse", envelope(3, true, Refuse{41, str("not now")})},
		{"msg-refuse-no-reason", envelope(3, true, Refuse{41, nil})},
		{"msg-ok", envelope(3, true, OK{})},
		{"msg-check_grants", envelope(4, true, CheckGrants{})},
		{"msg-grants_report", envelope(4, true, GrantsReport{[]GrantProblem{
			{"notes-read.toml", u64(7), "secret: secrets are not supported until M4"},
			{"Bad Name.toml", nil, "the file name is not a valid grant id"},
		}})},
		{"msg-grants_report-empty", envelope(4, true, GrantsReport{[]GrantProblem{}})},
		{"msg-say", envelope(5, true, Say{&fxSession, "read my notes for today"})},
		{"msg-say-new-session", envelope(5, true, Say{nil, "hello"})},
		{"msg-turn_event-session", envelope(5, false, TurnSession{fxSession, 0})},
		{"msg-turn_event-approval_pending", envelope(5, false, TurnApprovalPending{41, "read_file", fxExpires})},
		{"msg-turn_event-reply", envelope(5, true, TurnReply{"Your notes say hello."})},
		{"msg-broker_start", envelope(1, true, BrokerStart{fxBroker, &AuditHead{40, fxHash}})},
		{"msg-broker_start-empty_log", envelope(1, true, BrokerStart{fxBroker, nil})},
		{"msg-audit_head", envelope(1, true, AuditHead{44, fxHash})},
		{"msg-health", envelope(1, true, Health{})},
		{"msg-health_report", envelope(1, true, HealthReport{[]HealthCheck{
			{"grants", true, "3 grant files, no problem", ""},
			{"taint floor", false, "the floor cannot be read: unexpected end of JSON input", "see docs/runbook.md#broker-floor-damaged"}}, &AuditHead{44, fxHash}})},
		{"msg-health_report-loopd", envelope(1, true, HealthReport{[]HealthCheck{{"model", true, "n_ctx 4096, 1 slot", ""}}, nil})},
		{"msg-approval_request", envelope(1, true, ApprovalRequest{fxBroker, 41, fxSession, 3, "shell", fxArgs, "shell-scratch", Private, fxTime, fxExpires,
			CallDigest("shell", fxArgs, "shell-scratch", Private), AuditHead{41, fxHash}})},
		{"msg-approval_posted", envelope(1, false, ApprovalPosted{fxPost})},
		{"msg-owner_answer-approved", envelope(1, true, OwnerAnswer{Approved, fxOwner, fxPost, nil})},
		{"msg-owner_answer-refused", envelope(1, true, OwnerAnswer{Refused, fxOwner, fxPost, str("not on a Sunday")})},
		{"msg-approval_ended-approved", envelope(2, true, ApprovalEnded{41, EndApproved, str(fxOwner), str(fxPost), nil, nil})},
		{"msg-approval_ended-approved-denied", envelope(2, true, ApprovalEnded{41, EndApproved, str("bxctl"), nil, nil, func() *DenyReason { r := TaintTooHigh; return &r }()})},
		{"msg-approval_ended-refused", envelope(2, true, ApprovalEnded{41, EndRefused, str(fxOwner), str(fxPost), str("not on a Sunday"), func() *DenyReason { r := ApprovalRefused; return &r }()})},
		{"msg-approval_ended-expired", envelope(2, true, ApprovalEnded{41, EndExpired, nil, nil, nil, func() *DenyReason { r := ApprovalExpired; return &r }()})},
		{"msg-approval_ended-abandoned", envelope(2, true, ApprovalEnded{41, EndAbandoned, nil, nil, nil, nil})},
		{"msg-notes_list", envelope(6, true, NotesList{})},
		{"msg-note_list", envelope(6, true, NoteList{[]NoteInfo{fxNote, fxNotePromoted}})},
		{"msg-note_list-empty", envelope(6, true, NoteList{[]NoteInfo{}})},
		{"msg-note_show", envelope(6, true, NoteShow{"n-1789632300000-1"})},
		{"msg-note_shown", envelope(6, true, NoteShown{fxNote, "Kyle prefers <b>short</b> answers.\nlabel: trusted"})},
		{"msg-note_shown-promoted", envelope(6, true, NoteShown{fxNotePromoted, ""})},
		{"msg-note_promote", envelope(6, true, NotePromote{"n-1789632300000-1", fxHash})},
		{"msg-note_delete", envelope(6, true, NoteDelete{"n-1789632300000-1"})},
		{"msg-jobs_list", envelope(6, true, JobsList{})},
		{"msg-job_list", envelope(6, true, JobList{[]JobInfo{
			{"daily-digest", "0 7 * * *", JobBoth, UnattendedAsk, true, &JobLastRun{fxTime, fxTime, &fxExpires, TriggerScheduled, &fxJobSession, "ok"}, &fxExpires},
			{"inbox-watch", "every 15m", JobPost, UnattendedDeny, false, &JobLastRun{fxTime, fxTime, nil, TriggerCatchUp, nil, "skipped: overlap"}, nil},
			{"weekly", "0 9 * * 1", JobNote, UnattendedAsk, false, nil, &fxExpires},
		}, []GrantProblem{{"bad.toml", u64(3), "schedule: \"0 7 * *\" is not a cron schedule"}}})},
		{"msg-job_list-empty", envelope(6, true, JobList{[]JobInfo{}, []GrantProblem{}})},
		{"msg-job_run_now", envelope(6, true, JobRunNow{"daily-digest"})},
		{"msg-job_run_started", envelope(6, true, JobRunStarted{"daily-digest", fxTime})},
		{"msg-job_result", envelope(1, true, JobResult{"morning-digest", SessionID{"job-morning-digest-1789632300000"}, JobOK,
			"Three new mails.\n> ⏰ Scheduled job x: finished @channel <b>&\u0001"})},
		{"msg-job_result-failed", envelope(1, true, JobResult{"morning-digest", SessionID{"job-morning-digest-1789632300000"}, JobFailed,
			"the model server is unavailable"})},
		{"msg-job_result_posted", envelope(1, true, JobResultPosted{fxPost})},
	}
	for _, r := range AllDenyReasons() {
		fx = append(fx, fixture{"msg-tool_response-denied-" + r.String(), envelope(7, true, DeniedResponse{r})})
	}
	for _, c := range AllErrorCodes() {
		fx = append(fx, fixture{"msg-error-" + c.String(), envelope(9, true, WireError{c, "detail for " + c.String()})})
	}
	rec := func(seq uint64, ev AuditEvent) *AuditRecord {
		return &AuditRecord{Seq: seq, Time: fxTime, Prev: fxHash, Event: ev}
	}
	grant := str("shell-scratch")
	fx = append(fx,
		fixture{"audit-decision-allowed", rec(0, DecisionEvent{fxSession, 3, "read_file", fxReadArgs, OutcomeAllowed{}, str("notes-read"), &fxHash, Private, false})},
		fixture{"audit-decision-ask", rec(41, DecisionEvent{fxSession, 3, "shell", fxArgs, OutcomeAsk{}, grant, &fxHash, Private, true})},
		fixture{"audit-decision-denied", rec(42, DecisionEvent{fxSession, 4, "http_fetch", `{"url":"https://example.com/"}`, OutcomeDenied{NoGrant}, nil, nil, Secret, true})},
		fixture{"audit-approval-approved", rec(43, ApprovalEvent{fxSession, 3, 41, Approved, str("bxctl"), nil, nil, OutcomeAsk{}})},
		fixture{"audit-approval-refused", rec(43, ApprovalEvent{fxSession, 3, 41, Refused, str("bxctl"), nil, str("not now"), OutcomeDenied{ApprovalRefused}})},
		fixture{"audit-approval-expired", rec(43, ApprovalEvent{fxSession, 3, 41, Expired, nil, nil, nil, OutcomeDenied{ApprovalExpired}})},
		fixture{"audit-result-result", rec(44, ResultEvent{fxSession, 3, 41, StatusResult, Private, true, false, 1234, fxHash, Private})},
		fixture{"audit-result-failed", rec(44, ResultEvent{fxSession, 3, 41, StatusFailed, Public, false, false, 25, fxHash, Secret})},
		fixture{"audit-recovery", rec(45, RecoveryEvent{117, fxHash})},
		fixture{"audit-accepted_break", rec(46, AcceptedBreakEvent{"2026-09-17.jsonl", 12, fxHash})},
		fixture{"audit-accepted_head-differs", rec(47, AcceptedHeadEvent{HeadDiffers, func() *uint64 { n := uint64(52); return &n }(), &fxHash})},
		fixture{"audit-accepted_head-missing", rec(47, AcceptedHeadEvent{HeadMissing, nil, nil})},
		fixture{"audit-note_promoted", rec(48, NotePromotedEvent{"n-1789632300000-1", "bxctl", Private, true})},
		fixture{"audit-note_deleted", rec(49, NoteDeletedEvent{"n-1789632300000-1", "bxctl"})},
		fixture{"audit-job_started-scheduled", rec(50, JobStartedEvent{"daily-digest", fxJobSession, TriggerScheduled, fxTime, fxHash})},
		fixture{"audit-job_started-catch_up", rec(50, JobStartedEvent{"daily-digest", fxJobSession, TriggerCatchUp, fxTime, fxHash})},
		fixture{"audit-job_started-manual", rec(50, JobStartedEvent{"daily-digest", fxJobSession, TriggerManual, fxExpires, fxHash})},
		fixture{"audit-job_skipped", rec(51, JobSkippedEvent{"daily-digest", fxExpires, SkipOverlap})},
		fixture{"audit-job_ended-ok", rec(52, JobEndedEvent{"daily-digest", fxJobSession, JobOK, nil})},
		fixture{"audit-job_ended-failed", rec(52, JobEndedEvent{"daily-digest", fxJobSession, JobFailed, str("the model server is unavailable")})},
	)
	logrec := func(r LogRecord) *LogRecord { return &r }
	fx = append(fx,
		fixture{"log-session_start", logrec(SessionStart{fxTime, fxSession, 0, 1, fxHash})},
		fixture{"log-user", logrec(UserRecord{fxTime, "read my notes for today"})},
		fixture{"log-assistant", logrec(AssistantRecord{fxTime, nil, str("The user wants notes."), []ToolCall{{"call_0", "call_tool", `{"tool":"read_file","arguments":{"path":"/home/kyle/notes/a.md"}}`}}})},
		fixture{"log-assistant-text", logrec(AssistantRecord{fxTime, str("Here they are."), nil, []ToolCall{}})},
		fixture{"log-tool_result", logrec(ToolResultRecord{fxTime, 3, "call_0", "Denied: no grant allows this call.", Public, false, false})},
		fixture{"log-cache_loss", logrec(CacheLoss{fxTime, 5120, 1024})},
		fixture{"log-epoch_end", logrec(EpochEnd{fxTime, 1, "We read the notes."})},
		fixture{"log-refused", logrec(RefusedRecord{fxTime, 9000, 8192})},
		fixture{"log-answer_cut", logrec(AnswerCut{fxTime, 2048, CutAnswerLimit})},
		fixture{"log-answer_cut-context_full", logrec(AnswerCut{fxTime, 37, CutContextFull})},
	)
	turn := func(e TurnEvent) *TurnEvent { return &e }
	fx = append(fx,
		fixture{"turn-session", turn(TurnSession{fxSession, 2})},
		fixture{"turn-text", turn(TurnText{"Let me look."})},
		fixture{"turn-tool_call", turn(TurnToolCall{3, "read_file", fxReadArgs})},
		fixture{"turn-tool_outcome-result", turn(TurnToolOutcome{3, "read_file", ToolResult, nil, Private, false})},
		fixture{"turn-tool_outcome-denied", turn(TurnToolOutcome{3, "read_file", ToolDenied, func() *DenyReason { r := NoGrant; return &r }(), Public, false})},
		fixture{"turn-approval_pending", turn(TurnApprovalPending{41, "shell", fxExpires})},
		fixture{"turn-answer_cut", turn(TurnAnswerCut{2048, CutAnswerLimit})},
		fixture{"turn-answer_cut-context_full", turn(TurnAnswerCut{37, CutContextFull})},
		fixture{"turn-reply", turn(TurnReply{"Your notes say hello."})},
		fixture{"turn-failed", turn(TurnFailed{"the model server is unavailable"})},
	)
	return fx
}

func encodeFixture(v any) ([]byte, error) {
	if e, ok := v.(*Envelope); ok {
		return MarshalEnvelope(*e)
	}
	return Marshal(v)
}

// decodeFixture decodes b into a new value of the same type as v.
func decodeFixture(v any, b []byte) (any, error) {
	if _, ok := v.(*Envelope); ok {
		e, err := UnmarshalEnvelope(b)
		return &e, err
	}
	p := reflect.New(reflect.TypeOf(v).Elem())
	err := Unmarshal(b, p.Interface())
	return p.Interface(), err
}

func TestFixtures(t *testing.T) {
	seen := map[string]bool{}
	for _, fx := range fixtures() {
		path := filepath.Join(fixtureDir, fx.name+".json")
		if seen[fx.name] {
			t.Fatalf("two fixtures named %s", fx.name)
		}
		seen[fx.name] = true
		got, err := encodeFixture(fx.v)
		if err != nil {
			t.Errorf("%s: encode: %v", fx.name, err)
			continue
		}
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./wire -update to create it)", fx.name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoding differs from the fixture\n got: %s\nwant: %s", fx.name, got, want)
			continue
		}
		back, err := decodeFixture(fx.v, want)
		if err != nil {
			t.Errorf("%s: decode: %v", fx.name, err)
			continue
		}
		if !reflect.DeepEqual(back, fx.v) {
			t.Errorf("%s: decoded value differs\n got: %#v\nwant: %#v", fx.name, back, fx.v)
		}
		again, err := encodeFixture(back)
		if err != nil || !bytes.Equal(again, want) {
			t.Errorf("%s: decode then encode is not the same bytes: %s %v", fx.name, again, err)
		}
	}
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !seen[name] {
			t.Errorf("fixture %s has no case in fixtures_test.go", e.Name())
		}
	}
}

// TestFixturesCoverEveryVariant keeps the fixtures the whole wire spec: a new
// kind or variant without a fixture fails here.
func TestFixturesCoverEveryVariant(t *testing.T) {
	names := map[string]bool{}
	for _, fx := range fixtures() {
		names[fx.name] = true
	}
	has := func(prefix string) bool {
		for n := range names {
			if n == prefix || strings.HasPrefix(n, prefix+"-") {
				return true
			}
		}
		return false
	}
	var want []string
	for k := range messages {
		if k != KindToolResponse && k != KindTurnEvent {
			want = append(want, "msg-"+k)
		}
	}
	for k := range toolResponses.variants {
		want = append(want, "msg-tool_response-"+k)
	}
	for k := range auditEvents.variants {
		want = append(want, "audit-"+k)
	}
	for k := range logRecords.variants {
		want = append(want, "log-"+k)
	}
	for k := range turnEvents.variants {
		want = append(want, "turn-"+k)
	}
	for k := range decisionRecords.variants {
		want = append(want, "msg-approve_result-"+k, "audit-decision-"+k)
	}
	sort.Strings(want)
	for _, w := range want {
		if !has(w) {
			t.Errorf("no fixture for %s", w)
		}
	}
}
