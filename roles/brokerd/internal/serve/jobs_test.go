package serve

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/jobs/jobstest"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/wire"
)

// fakeLoop is loopd's jobs socket, played by the test: each say brokerd
// sends arrives on says, and the test answers it as loopd would.
type fakeLoop struct {
	says chan heardSay
}

type heardSay struct {
	say  wire.Say
	conn net.Conn
}

// answer ends the turn of h with reply, as loopd does: the session, then
// the reply, final.
func (h heardSay) answer(t *testing.T, reply string) {
	t.Helper()
	for _, env := range []wire.Envelope{wire.Reply(1, false, wire.TurnSession{Session: *h.say.Session}),
		wire.Reply(1, true, wire.TurnReply{Content: reply})} {
		if err := wire.WriteEnvelope(h.conn, env); err != nil {
			t.Fatal(err)
		}
	}
	h.conn.Close()
}

func listenLoop(t *testing.T, path string) *fakeLoop {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakeLoop{says: make(chan heardSay, 8)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			env, err := wire.ReadEnvelope(c)
			if err != nil {
				c.Close()
				continue
			}
			say, _ := env.Msg.(wire.Say)
			f.says <- heardSay{say, c}
		}
	}()
	return f
}

// next waits for brokerd's next say.
func (f *fakeLoop) next(t *testing.T) heardSay {
	t.Helper()
	select {
	case h := <-f.says:
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("no job run started")
	}
	return heardSay{}
}

// withJobs gives brokerd a jobs directory holding files, loopd's jobs
// socket at <dir>/jl.sock, and the fake clock.
func withJobs(t *testing.T, files map[string]string, clock *jobstest.Clock) option {
	return func(o *Options) {
		dir := filepath.Dir(o.Config.Paths.Grants)
		jobsDir := filepath.Join(dir, "jobs")
		if err := os.MkdirAll(jobsDir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(jobsDir, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		o.Config.Paths.Jobs = jobsDir
		o.Config.Sockets.Loop = filepath.Join(dir, "jl.sock")
		o.JobsClock = clock
		o.Now = clock.Now
	}
}

var jobsT0 = time.Date(2026, 12, 4, 10, 30, 0, 0, time.UTC)

// TestJobRunsBoundToItsJob: at its due time (a fake clock) brokerd starts
// each job's run on loopd's jobs socket, in a session it named and bound
// first. That session uses its job's grants and nothing else; an
// interactive session cannot use them, nor can a session loopd names like
// a job's, nor a request that claims a job; an ask in a job whose file says
// unattended_ask = "deny" is denied at once; once the run ends the session
// sees no grant; the reply becomes a note labelled with the session's
// state; and everything is in the audit log.
func TestJobRunsBoundToItsJob(t *testing.T) {
	clock := jobstest.NewClock(jobsT0)
	grants := map[string]string{
		"job-remember.toml":    grantRemember + "job = \"nightly\"\n",
		"chat-recall.toml":     grantRecall,
		"strict-remember.toml": strings.Replace(grantRemember, `"auto"`, `"ask"`, 1) + "job = \"strict\"\n",
	}
	jobFiles := map[string]string{
		"nightly.toml": "every = \"1h\"\nprompt = \"Summarise the day.\"\nresult = \"note\"\n",
		"strict.toml":  "every = \"1h\"\nprompt = \"Be strict.\"\nresult = \"note\"\nunattended_ask = \"deny\"\n",
	}
	var loop *fakeLoop
	h := start(t, grants, withJobs(t, jobFiles, clock), func(o *Options) { loop = listenLoop(t, o.Config.Sockets.Loop) })
	clock.WaitIdle(t, 0)
	clock.To(t, jobsT0.Add(30*time.Minute))

	runs := map[string]heardSay{}
	for range 2 {
		s := loop.next(t)
		if s.say.Session == nil {
			t.Fatal("a say without a session")
		}
		runs[s.say.Text] = s
	}
	nightly, strict := runs["Summarise the day."], runs["Be strict."]
	if nightly.conn == nil || strict.conn == nil || !strings.HasPrefix(nightly.say.Session.String(), "job-nightly-") {
		t.Fatalf("runs %+v", runs)
	}
	s1 := nightly.say.Session.String()
	remember := func(session string, call uint64) wire.Message {
		return h.call(wire.ToolRequest{Session: sid(t, session), Call: wire.CallID(call), Tool: "remember",
			Arguments: `{"title":"t","text":"x"}`})
	}
	denied := func(what string, msg wire.Message, want wire.DenyReason) {
		t.Helper()
		if d, ok := msg.(wire.DeniedResponse); !ok || d.Reason != want {
			t.Fatalf("%s: %#v, want denied %s", what, msg, want)
		}
	}
	if _, ok := remember(s1, 1).(wire.ResultResponse); !ok {
		t.Fatal("the job's session could not use its job's grant")
	}
	denied("the job's session, an interactive grant", h.call(wire.ToolRequest{Session: sid(t, s1), Call: 2, Tool: "recall",
		Arguments: `{"query":"x"}`}), wire.NoGrant)
	denied("an interactive session, the job's grant", remember("chat-1", 1), wire.NoGrant)
	denied("a session loopd named like a job's", remember("job-nightly-1", 1), wire.NoGrant)
	denied("an unattended ask", remember(strict.say.Session.String(), 1), wire.UnattendedDenied)

	// A request that claims a job is not a tool request at all: wire's
	// decoding is strict.
	c := dial(t, h.cfg.Sockets.Broker)
	body := `{"session":"chat-1","call":9,"tool":"remember","arguments":"{\"title\":\"t\",\"text\":\"x\"}","job":"nightly"}`
	frame := `{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":` + body + `}}`
	if _, err := c.Write(append([]byte{0, 0, 0, byte(len(frame))}, frame...)); err != nil {
		t.Fatal(err)
	}
	if we, ok := c.next(t).Msg.(wire.WireError); !ok || we.Code != wire.BadMessage {
		t.Fatal("a tool request naming a job was not refused")
	}

	nightly.answer(t, "Three things happened today.")
	strict.answer(t, "Nothing to report.")
	eventually(t, "both runs to end", func() bool {
		n := 0
		for _, ev := range h.events() {
			if _, ok := ev.(wire.JobEndedEvent); ok {
				n++
			}
		}
		return n == 2
	})
	denied("the job's session after its run", remember(s1, 3), wire.NoGrant)

	st, _, err := notes.Open(filepath.Join(h.cfg.Paths.Home, "memory", "notes"), filepath.Join(t.TempDir(), "index"))
	if err != nil {
		t.Fatal(err)
	}
	found, err := st.Search("three things happened", 5)
	if err != nil || len(found) != 1 || found[0].Label.Session.String() != s1 || found[0].Label.Untrusted {
		t.Fatalf("the run's note: %+v %v", found, err)
	}

	// The audit log: each run's start (scheduled, due on the hour) before
	// any of its decisions, and its end.
	var started []wire.JobStartedEvent
	for _, ev := range h.events() {
		switch e := ev.(type) {
		case wire.JobStartedEvent:
			started = append(started, e)
		case wire.DecisionEvent:
			if strings.HasPrefix(e.Session.String(), "job-") && e.Session.String() != "job-nightly-1" && len(started) < 2 {
				t.Fatalf("a decision of %s before both runs were recorded as started", e.Session)
			}
		}
	}
	if len(started) != 2 || started[0].Trigger != wire.TriggerScheduled || started[0].Due.Time() != jobsT0.Add(30*time.Minute) {
		t.Fatalf("job_started records: %+v", started)
	}

	// Overlap: the next hour's nightly run is held by loopd; the one after
	// is skipped and recorded.
	clock.To(t, jobsT0.Add(90*time.Minute))
	held := map[string]heardSay{}
	for range 2 {
		s := loop.next(t)
		held[s.say.Text] = s
	}
	held["Be strict."].answer(t, "ok")
	clock.To(t, jobsT0.Add(150*time.Minute))
	eventually(t, "the overlapping run to be skipped", func() bool {
		for _, ev := range h.events() {
			if e, ok := ev.(wire.JobSkippedEvent); ok && e.Job == "nightly" && e.Reason == wire.SkipOverlap {
				return true
			}
		}
		return false
	})
	held["Summarise the day."].answer(t, "late")
	strictAgain := loop.next(t)
	if strictAgain.say.Text != "Be strict." {
		t.Fatalf("at 13:00 only strict runs; got %q", strictAgain.say.Text)
	}
	strictAgain.answer(t, "ok")
}

// restart stops brokerd and starts it again on the same home, with opts.
func (h *harness) restart(opts ...option) {
	h.t.Helper()
	h.stop()
	o := Options{Config: h.cfg, Runtime: hookedRuntime{h}, Stderr: h.stderr, States: h.states, RequestTimeout: 10 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	srv, err := Start(o)
	if err != nil {
		h.t.Fatal(err)
	}
	h.srv = srv
}

// TestJobCatchUpAfterDowntime: brokerd is down over three due times; at
// its start the job that says catch_up = true runs once, recorded as a
// catch-up, and the job that does not waits for its next due time.
func TestJobCatchUpAfterDowntime(t *testing.T) {
	clock := jobstest.NewClock(jobsT0)
	jobFiles := map[string]string{
		"catchy.toml": "every = \"1h\"\nprompt = \"Catch up.\"\nresult = \"note\"\ncatch_up = true\n",
		"plain.toml":  "every = \"1h\"\nprompt = \"Plain.\"\nresult = \"note\"\n",
	}
	var loop *fakeLoop
	h := start(t, nil, withJobs(t, jobFiles, clock), func(o *Options) { loop = listenLoop(t, o.Config.Sockets.Loop) })
	clock.WaitIdle(t, 0)
	clock.To(t, jobsT0.Add(30*time.Minute))
	for range 2 {
		loop.next(t).answer(t, "done")
	}
	ended := func(n int) func() bool {
		return func() bool {
			k := 0
			for _, ev := range h.events() {
				if _, ok := ev.(wire.JobEndedEvent); ok {
					k++
				}
			}
			return k == n
		}
	}
	eventually(t, "the first runs to end", ended(2))

	// Down from 11:00 to 14:10: the 12:00, 13:00 and 14:00 runs are missed.
	h.stop()
	made, _ := clock.State()
	clock.Advance(3*time.Hour + 10*time.Minute)
	h.restart(withJobs(t, jobFiles, clock))
	caught := loop.next(t)
	if caught.say.Text != "Catch up." {
		t.Fatalf("at start, %q ran", caught.say.Text)
	}
	caught.answer(t, "caught up")
	eventually(t, "the catch-up run to end", ended(3))
	clock.WaitIdle(t, made)
	select {
	case s := <-loop.says:
		t.Fatalf("a second run at start: %q", s.say.Text)
	case <-time.After(200 * time.Millisecond):
	}
	var triggers []string
	for _, ev := range h.events() {
		if e, ok := ev.(wire.JobStartedEvent); ok {
			triggers = append(triggers, e.Job+":"+e.Trigger.String()+"@"+e.Due.Time().Format("15:04"))
		}
	}
	if got := strings.Join(triggers, " "); got != "catchy:scheduled@11:00 plain:scheduled@11:00 catchy:catch_up@12:00" &&
		got != "plain:scheduled@11:00 catchy:scheduled@11:00 catchy:catch_up@12:00" {
		t.Fatalf("job_started records: %s", got)
	}
	// At 15:00 both run as scheduled again.
	clock.To(t, jobsT0.Add(4*time.Hour+30*time.Minute))
	for range 2 {
		loop.next(t).answer(t, "done")
	}
	eventually(t, "the 15:00 runs to end", ended(5))
}

// TestApprovalAfterRunEnded: a job's call waits for the owner; the run
// ends before the owner answers (loopd ended the turn); the approval then
// finds the session out of its job's scope, and the call is denied, never
// run under the job's grant.
func TestApprovalAfterRunEnded(t *testing.T) {
	clock := jobstest.NewClock(jobsT0)
	grants := map[string]string{"ask.toml": strings.Replace(grantRemember, `"auto"`, `"ask"`, 1) + "job = \"nightly\"\n"}
	jobFiles := map[string]string{"nightly.toml": "every = \"1h\"\nprompt = \"Go.\"\nresult = \"note\"\n"}
	var loop *fakeLoop
	h := start(t, grants, withJobs(t, jobFiles, clock), func(o *Options) { loop = listenLoop(t, o.Config.Sockets.Loop) })
	clock.WaitIdle(t, 0)
	clock.To(t, jobsT0.Add(30*time.Minute))
	run := loop.next(t)
	c, p := h.pending(wire.ToolRequest{Session: *run.say.Session, Call: 1, Tool: "remember", Arguments: `{"title":"t","text":"x"}`})
	run.answer(t, "gave up waiting")
	eventually(t, "the run to end", func() bool {
		for _, ev := range h.events() {
			if _, ok := ev.(wire.JobEndedEvent); ok {
				return true
			}
		}
		return false
	})
	res, ok := h.admin(wire.Approve{Approval: p.Approval}).(wire.ApproveResult)
	if d, denied := res.Outcome.(wire.OutcomeDenied); !ok || !denied || d.Reason != wire.NoGrant {
		t.Fatalf("approve after the run ended: %#v", res)
	}
	if d, ok := c.next(t).Msg.(wire.DeniedResponse); !ok || d.Reason != wire.NoGrant {
		t.Fatal("the call was not denied")
	}
	if n := h.rt.Count(); n != 0 {
		t.Fatalf("%d runs", n)
	}
}
