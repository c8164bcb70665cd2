package bxctl

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

// fakeBrokerd answers admin.sock requests with answer's frames (all but
// the last not final), and records them.
type fakeBrokerd struct {
	path   string
	answer func(wire.Message) []wire.Message
	mu     sync.Mutex
	got    []wire.Message
}

// startFake listens at path (a short temporary one if empty) until the
// test ends, answering each request with one frame.
func startFake(t *testing.T, path string, answer func(wire.Message) wire.Message) *fakeBrokerd {
	t.Helper()
	return startPaged(t, path, func(m wire.Message) []wire.Message { return []wire.Message{answer(m)} })
}

// startPaged is startFake with answers of several frames.
func startPaged(t *testing.T, path string, answer func(wire.Message) []wire.Message) *fakeBrokerd {
	t.Helper()
	if path == "" {
		dir, err := os.MkdirTemp("", "bx")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		path = filepath.Join(dir, "admin.sock")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeBrokerd{path: path, answer: answer}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				env, err := wire.ReadRequest(c)
				if err != nil {
					t.Errorf("fake brokerd: %v", err)
					return
				}
				f.mu.Lock()
				f.got = append(f.got, env.Msg)
				f.mu.Unlock()
				msgs := f.answer(env.Msg)
				for i, m := range msgs {
					if err := wire.WriteEnvelope(c, wire.Reply(env.ID, i == len(msgs)-1, m)); err != nil {
						t.Errorf("fake brokerd: %v", err)
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return f
}

func (f *fakeBrokerd) requests() []wire.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.Message(nil), f.got...)
}

var now0 = time.Date(2026, 9, 17, 8, 7, 0, 0, time.UTC)

// run runs bxctl with args at now0.
func run(args ...string) (int, string, string) {
	var out, errs bytes.Buffer
	code := runCLI(&cli{}, args, &env{name: "bxctl", stdin: strings.NewReader(""), stdout: &out, stderr: &errs,
		now: func() time.Time { return now0 }})
	return code, out.String(), errs.String()
}

func always(m wire.Message) func(wire.Message) wire.Message {
	return func(wire.Message) wire.Message { return m }
}

func session(t *testing.T, s string) wire.SessionID {
	id, err := wire.NewSessionID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestApprovalsOutput: the spec's example, an argument full of escape
// sequences, and one that hides a command behind bidirectional controls and
// padding (issue 12), all printed as data, with the arguments' length.
func TestApprovalsOutput(t *testing.T) {
	at := func(d time.Duration) wire.Timestamp { return wire.TimestampOf(now0.Add(d)) }
	items := []wire.PendingApproval{
		{Approval: 41, Session: session(t, "chat-1758096300"), Call: 3, Tool: "shell",
			Arguments: `{"command": "rm -rf /home/kyle/scratch/build", "cwd": "/home/kyle/scratch"}`,
			Grant:     "shell-scratch", Taint: wire.Private, Created: at(-2 * time.Minute), Expires: at(13 * time.Minute)},
		{Approval: 42, Session: session(t, "s-1"), Call: 4, Tool: "read_file",
			Arguments: "{\"path\": \"/a\x1b[2J\x1b]0;owned\x07\r\n\tb\x7f\u0085\u009b31m\u200bc\"}",
			Grant:     "notes", Taint: wire.Secret, Created: at(-30 * time.Second), Expires: at(-time.Second)},
		{Approval: 43, Session: session(t, "s-1"), Call: 5, Tool: "shell",
			Arguments: "{\"command\": \"cat a ; rm -rf ~/notes #\u202e\u2066 txt.seton/~ fr- mr ; a tac\u2069" + strings.Repeat(" ", 400) + "\"}",
			Grant:     "shell-scratch", Taint: wire.Public, Created: at(-time.Second), Expires: at(time.Hour)},
	}
	f := startFake(t, "", always(wire.ApprovalList{Items: items}))
	code, out, errs := run("approvals", "--admin-socket", f.path)
	want := "41  2 min ago  expires in 13 min  session chat-1758…  grant shell-scratch  taint private  arguments 75 bytes  digest 62c96eee9515436c\n" +
		`    shell {"command": "rm -rf /home/kyle/scratch/build", "cwd": "/home/kyle/scratch"}` + "\n" +
		"42  30 s ago  expires now  session s-1  grant notes  taint secret  arguments 44 bytes  digest 9a7bc7a4651abd7f\n" +
		`    read_file {"path": "/a\u001b[2J\u001b]0;owned\u0007\u000d\u000a\u0009b\u007f\u0085\u009b31m\u200bc"}` + "\n" +
		"43  1 s ago  expires in 1 h  session s-1  grant shell-scratch  taint public  arguments 475 bytes  digest 05c7197253ed4854\n" +
		`    shell {"command": "cat a ; rm -rf ~/notes #\u202e\u2066 txt.seton/~ fr- mr ; a tac\u2069\u0020{400}"}` + "\n"
	if code != 0 || out != want || errs != "" {
		t.Fatalf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errs, out, want)
	}
	if strings.ContainsAny(out, "\x1b\x07\r\x7f\u0085\u009b\u200b\u202e\u2066\u2069") {
		t.Fatal("a control or format character reached the terminal")
	}
	if r := f.requests(); len(r) != 1 || r[0] != (wire.Approvals{}) {
		t.Fatalf("requests %+v", r)
	}
}

func TestApprovalsEmpty(t *testing.T) {
	f := startFake(t, "", always(wire.ApprovalList{Items: []wire.PendingApproval{}}))
	if code, out, errs := run("approvals", "--admin-socket", f.path); code != 0 || out != "no pending approvals\n" || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestApprove(t *testing.T) {
	for _, tc := range []struct {
		outcome wire.DecisionRecord
		want    string
	}{
		{wire.OutcomeAsk{}, "approved 41: runs\n"},
		{wire.OutcomeAllowed{}, "approved 41: runs\n"},
		{wire.OutcomeDenied{Reason: wire.TaintTooHigh}, "approved 41: denied (taint_too_high)\n"},
		{wire.OutcomeDenied{Reason: wire.NoGrant}, "approved 41: denied (no_grant)\n"},
		{wire.OutcomeDenied{Reason: wire.SecretUnavailable}, "approved 41: denied (secret_unavailable)\n" +
			"the grant's secret cannot be read now; brokerd's log says which and why\nsee docs/runbook.md#secret-unavailable\n"},
	} {
		f := startFake(t, "", always(wire.ApproveResult{Outcome: tc.outcome}))
		code, out, errs := run("approve", "41", "--admin-socket", f.path)
		if code != 0 || out != tc.want || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.outcome, code, out, errs)
		}
		if r := f.requests(); len(r) != 1 || r[0] != (wire.Approve{Approval: 41}) {
			t.Errorf("requests %+v", r)
		}
	}
}

func TestApproveOrRefuseUnknown(t *testing.T) {
	f := startFake(t, "", always(wire.WireError{Code: wire.NoSuchApproval, Detail: "no pending approval 41"}))
	for _, cmd := range []string{"approve", "refuse"} {
		code, out, errs := run(cmd, "41", "--admin-socket", f.path)
		if code != 1 || out != "" || !strings.HasPrefix(errs, "bxctl "+cmd+": no pending approval 41 (") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", cmd, code, out, errs)
		}
	}
}

func TestRefuse(t *testing.T) {
	f := startFake(t, "", always(wire.OK{}))
	if code, out, errs := run("refuse", "41", "--reason", "not\x1b today", "--admin-socket", f.path); code != 0 || out != "refused 41\n" || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, _ := run("refuse", "7", "--admin-socket", f.path); code != 0 || out != "refused 7\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	r := f.requests()
	if len(r) != 2 {
		t.Fatalf("requests %+v", r)
	}
	if m := r[0].(wire.Refuse); m.Approval != 41 || m.Reason == nil || *m.Reason != "not\x1b today" {
		t.Errorf("first %+v", m)
	}
	if m := r[1].(wire.Refuse); m.Approval != 7 || m.Reason != nil {
		t.Errorf("second %+v", m)
	}
}

func TestBrokerdErrorIsReported(t *testing.T) {
	f := startFake(t, "", always(wire.WireError{Code: wire.Forbidden, Detail: "admin.sock does not accept \x1b[31m"}))
	code, out, errs := run("approvals", "--admin-socket", f.path)
	if code != 1 || out != "" || errs != "bxctl approvals: brokerd refused the request: forbidden: admin.sock does not accept \\u001b[31m\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	f = startFake(t, "", always(wire.OK{}))
	if code, _, errs := run("approve", "1", "--admin-socket", f.path); code != 1 || errs != "bxctl approve: brokerd answered with ok\n" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestAdminSocketUnreachable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	for _, args := range [][]string{{"approvals"}, {"approve", "41"}, {"refuse", "41"}, {"grants", "check"}} {
		name := strings.Join(args[:len(args)-btoi(args[0] != "approvals" && args[0] != "grants")], " ")
		code, out, errs := run(append(args, "--admin-socket", path)...)
		want := "bxctl " + name + ": cannot reach brokerd at " + path + ": "
		if code != 1 || out != "" || !strings.HasPrefix(errs, want) || !strings.HasSuffix(errs, "\nsee docs/runbook.md#admin-unavailable\n") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want it to start %q", args, code, out, errs, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAdminSocketDefault: without --admin-socket, the socket under
// BOXMAKER_HOME.
func TestAdminSocketDefault(t *testing.T) {
	home, err := os.MkdirTemp("", "bx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	sock := filepath.Join(home, "run", "owner-broker", "admin.sock")
	os.MkdirAll(filepath.Dir(sock), 0o700)
	startFake(t, sock, always(wire.ApprovalList{Items: []wire.PendingApproval{}}))
	t.Setenv("BOXMAKER_HOME", home)
	if code, out, errs := run("approvals"); code != 0 || out != "no pending approvals\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if got := adminSocket(""); got != sock {
		t.Fatalf("default %q", got)
	}
	t.Setenv("BOXMAKER_HOME", "")
	if got := adminSocket(""); got != "/var/lib/boxmaker/run/owner-broker/admin.sock" {
		t.Fatalf("default without BOXMAKER_HOME %q", got)
	}
}

// TestGrantsCheckOverTheSocket prints what the offline check prints.
func TestGrantsCheckOverTheSocket(t *testing.T) {
	line := uint64(4)
	problems := []wire.GrantProblem{
		{File: "Bad.toml", Problem: "the file stem \"Bad\" is not a valid grant id (1 to 64 characters of [a-z0-9-])"},
		{File: "a.toml", Line: &line, Problem: "secret: read_file cannot be given a secret; only shell and http_fetch can"},
	}
	f := startFake(t, "", always(wire.GrantsReport{Problems: problems}))
	want := "Bad.toml: the file stem \"Bad\" is not a valid grant id (1 to 64 characters of [a-z0-9-])\n" +
		"a.toml:4: secret: read_file cannot be given a secret; only shell and http_fetch can\n" +
		"see docs/runbook.md#grants-invalid\n"
	if code, out, errs := run("grants", "check", "--admin-socket", f.path); code != 1 || out != want || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if r := f.requests(); len(r) != 1 || r[0] != (wire.CheckGrants{}) {
		t.Fatalf("requests %+v", r)
	}
	f = startFake(t, "", always(wire.GrantsReport{Problems: []wire.GrantProblem{}}))
	if code, out, errs := run("grants", "check", "--admin-socket", f.path); code != 0 || out != "grants: ok\n" || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestApprovalsRows: under a narrow terminal the listing breaks its own
// rows, each continuation behind the gutter, so the terminal's wrap cannot
// start a row with argument text that looks like a block of its own.
func TestApprovalsRows(t *testing.T) {
	defer func(f func(io.Writer) int) { termWidth = f }(termWidth)
	termWidth = func(io.Writer) int { return 40 }
	items := []wire.PendingApproval{{Approval: 41, Session: session(t, "s-1"), Call: 3, Tool: "shell",
		Arguments: `{"command":"ls                  42  1 s ago  expires in 1 h"}`, Grant: "g", Taint: wire.Private,
		Created: wire.TimestampOf(now0), Expires: wire.TimestampOf(now0.Add(time.Hour))}}
	f := startFake(t, "", always(wire.ApprovalList{Items: items}))
	code, out, _ := run("approvals", "--admin-socket", f.path)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, row := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if utf8.RuneCountInString(row) > 40 {
			t.Errorf("a row wider than the terminal: %q", row)
		}
		if strings.HasPrefix(row, "42") {
			t.Errorf("argument text starts a row: %q", row)
		}
	}
	if !strings.Contains(out, "\n"+gutter) {
		t.Errorf("no continuation behind the gutter:\n%s", out)
	}
}
