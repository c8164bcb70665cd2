// Package jobrun runs one scheduled job's run for brokerd (issue 17): it is
// the scheduler's Start hook. brokerd, not loopd, names the run's session
// and binds it to the job (docs/decisions.md, "Memory and scheduled jobs:
// the design"), so that a job's grants are used only in a session brokerd
// started for that job, and only while its run lasts:
//
//  1. make the session id and write job_started to the audit log;
//  2. write the binding (broker/job-sessions/<id>.json) and mark the run
//     active; only then does loopd hear the id;
//  3. say the job's prompt on loopd's jobs socket and wait for the turn;
//  4. end the run (the session now sees no grant), deliver the result
//     (a post through gatewayd, a note labelled with the session's state,
//     or both), and write job_ended.
package jobrun

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/roles/brokerd/internal/state"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// Audit is what a run needs of the audit log.
type Audit interface {
	Append(ev wire.AuditEvent) (uint64, error)
}

// Poster posts a job's result to the owner (brokerd's gateway client).
type Poster interface {
	PostJobResult(ctx context.Context, r wire.JobResult) (post string, err error)
}

// DefaultMaxRun bounds a run when Runner.MaxRun is zero: a loopd that
// never ends the turn must not keep a job's grants live for its session.
// An hour leaves room for asks, whose approvals wait up to their TTL.
const DefaultMaxRun = time.Hour

// Runner starts and follows job runs. Its fields are set once, before the
// first Start.
type Runner struct {
	Audit    Audit
	Bindings *state.Bindings
	// States and Floor give the session's state when the run ends: the
	// label of a result written as a note.
	States interface {
		Read(id wire.SessionID) (policy.State, bool, error)
		Lock(id wire.SessionID) (unlock func())
	}
	Floor interface {
		Level() (wire.DataClass, error)
	}
	Notes *notes.Store
	// Poster is nil when there is no gatewayd: a result to post then
	// fails the run, and the owner is told in the log.
	Poster Poster
	// LoopSocket is loopd's jobs socket ([sockets] loop); empty: no run
	// can start.
	LoopSocket string
	// MaxRun bounds each run (DefaultMaxRun when zero): at its end the
	// turn is cut off and the run ends, failed.
	MaxRun time.Duration
	Now    func() time.Time
	Log    func(lines ...string)

	mu     sync.Mutex
	active map[wire.SessionID]string // session → job, while its run lasts
	last   map[string]wire.SessionID // job → its latest run's session
}

// LastSession is the session of the job's latest run started by this
// brokerd, for bxctl jobs.
func (r *Runner) LastSession(job string) (wire.SessionID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.last[job]
	return id, ok
}

// Scope is the scope session id is decided in: no job for an interactive
// session; its job while the run lasts; its job, ended, once it is over or
// when brokerd restarted during it (the binding is on disk, the run is not
// in this process). ok is false when the binding cannot be read: the call
// is then denied, never decided as interactive.
func (r *Runner) Scope(id wire.SessionID) (policy.Scope, error) {
	bd, bound, err := r.Bindings.Lookup(id)
	if err != nil {
		return policy.Scope{}, err
	}
	if !bound {
		return policy.Scope{}, nil
	}
	r.mu.Lock()
	job, running := r.active[id]
	r.mu.Unlock()
	return policy.Scope{Job: bd.Job, DenyAsks: bd.DenyAsks, Ended: !running || job != bd.Job || bd.Ended}, nil
}

// Start runs r to its end: the scheduler calls it in a goroutine of its
// own. The error is the run's outcome, for `bxctl jobs`.
func (r *Runner) Start(ctx context.Context, run jobs.Run) error {
	if r.LoopSocket == "" {
		r.Log("brokerd: job " + run.Job.Name + " is due, but [sockets] loop is not set: nothing runs; " + runbook.See("jobs-no-loop"))
		return errors.New("[sockets] loop is not set")
	}
	id, err := r.bind(run)
	if err != nil {
		r.Log("brokerd: job " + run.Job.Name + " not started: " + wire.Printable(err.Error()))
		return err
	}

	maxRun := r.MaxRun
	if maxRun <= 0 {
		maxRun = DefaultMaxRun
	}
	sayCtx, cancel := context.WithTimeout(ctx, maxRun)
	reply, sayErr := say(sayCtx, r.LoopSocket, id, run.Job.Prompt)
	if errors.Is(sayErr, context.DeadlineExceeded) {
		sayErr = fmt.Errorf("the run took longer than %s and was ended", maxRun)
	}
	cancel()

	// The run is over before anything is delivered: from here on the
	// session sees no grant, whatever loopd does with it.
	r.mu.Lock()
	delete(r.active, id)
	r.mu.Unlock()
	if err := r.Bindings.End(id); err != nil {
		// The in-memory mark already ended it; the file says so at the
		// next start (no run is active then).
		r.Log("brokerd: job " + run.Job.Name + ": " + err.Error())
	}
	status, content := wire.JobOK, reply
	if sayErr != nil {
		status, content = wire.JobFailed, sayErr.Error()
		r.Log(fmt.Sprintf("brokerd: job %s, session %s: %s; %s", run.Job.Name, id, wire.Printable(sayErr.Error()), runbook.See("job-failed")))
	}
	delivered := r.deliver(ctx, run, id, status, content)
	msg := ""
	if sayErr != nil || delivered != nil {
		msg = errors.Join(sayErr, delivered).Error()
	}
	r.ended(run, id, status, msg)
	if sayErr != nil {
		return sayErr
	}
	return delivered
}

// deliver posts the result and/or writes it as a note, as the job says.
func (r *Runner) deliver(ctx context.Context, run jobs.Run, id wire.SessionID, status wire.JobStatus, content string) error {
	var errs []error
	if run.Job.Result.Note() && status == wire.JobOK {
		if err := r.note(run, id, content); err != nil {
			errs = append(errs, fmt.Errorf("the result was not written as a note: %w", err))
		}
	}
	if run.Job.Result.Post() {
		if r.Poster == nil {
			errs = append(errs, errors.New("the result was not posted: there is no gatewayd ([sockets] gateway)"))
		} else if _, err := r.Poster.PostJobResult(ctx, wire.JobResult{Job: run.Job.Name, Session: id, Status: status,
			Content: cut(content, wire.MaxJobResultContent)}); err != nil {
			errs = append(errs, fmt.Errorf("the result was not posted: %w", err))
		}
	}
	for _, err := range errs {
		r.Log(fmt.Sprintf("brokerd: job %s, session %s: %s; %s", run.Job.Name, id, wire.Printable(err.Error()), runbook.See("job-failed")))
	}
	return errors.Join(errs...)
}

// note writes the reply as a note, labelled with the session's state as
// the turn left it (raised to the floor): a run that read something
// untrusted writes an untrusted note, like a remember call would.
//
// The session's lock is held from reading its state to writing the note,
// as for any call (issue 29, class 1): a label read apart from the write
// could miss a raise that landed between them.
func (r *Runner) note(run jobs.Run, id wire.SessionID, content string) error {
	defer r.States.Lock(id)()
	st, _, err := r.States.Read(id)
	if err != nil {
		return err
	}
	floor, err := r.Floor.Level()
	if err != nil {
		return err
	}
	now := r.Now()
	title := "Job " + run.Job.Name + ", " + wire.TimestampOf(run.Due).String()
	_, err = r.Notes.Put("", title, cut(content, notes.MaxTextBytes), notes.Label{Taint: max(st.Taint, floor), Untrusted: st.Untrusted,
		Session: id, WrittenAt: wire.TimestampOf(now)})
	return err
}

func (r *Runner) ended(run jobs.Run, id wire.SessionID, status wire.JobStatus, msg string) {
	ev := wire.JobEndedEvent{Job: run.Job.Name, Session: id, Status: status}
	if msg != "" {
		ev.Message = &msg
	}
	if _, err := r.Audit.Append(ev); err != nil {
		r.Log("brokerd: job " + run.Job.Name + ": its end could not be recorded: " + err.Error())
	}
}

// bind names the run's session, writes job_started and binds the session
// to the job, then marks the run active: only then may loopd hear the id.
// The id is job-<name>-<unix ms>, the name cut to fit 64 characters, with
// -2, -3, ... when that is taken; Bind's file is made exclusively, so two
// runs can never share one.
func (r *Runner) bind(run jobs.Run) (wire.SessionID, error) {
	name := run.Job.Name
	if len(name) > 40 {
		name = name[:40]
	}
	base := "job-" + name + "-" + strconv.FormatInt(r.Now().UnixMilli(), 10)
	for n := 1; n <= 100; n++ {
		s := base
		if n > 1 {
			s += "-" + strconv.Itoa(n)
		}
		id, err := wire.NewSessionID(s)
		if err != nil {
			return wire.SessionID{}, err
		}
		if _, bound, err := r.Bindings.Lookup(id); err != nil || bound {
			continue
		}
		// The record first: no session of a job runs unaudited.
		if _, err := r.Audit.Append(wire.JobStartedEvent{Job: run.Job.Name, Session: id, Trigger: run.Trigger.Wire(),
			Due: wire.TimestampOf(run.Due), JobSha256: run.Job.Sha256}); err != nil {
			return wire.SessionID{}, fmt.Errorf("the audit log cannot be written: %w", err)
		}
		err = r.Bindings.Bind(id, state.Binding{Job: run.Job.Name, DenyAsks: run.Job.DenyAsks})
		if errors.Is(err, state.ErrBound) {
			r.ended(run, id, wire.JobFailed, "another run took the session id first")
			continue
		}
		if err != nil {
			r.ended(run, id, wire.JobFailed, "not started: "+err.Error())
			return wire.SessionID{}, err
		}
		r.mu.Lock()
		if r.active == nil {
			r.active, r.last = map[wire.SessionID]string{}, map[string]wire.SessionID{}
		}
		r.active[id] = run.Job.Name
		r.last[run.Job.Name] = id
		r.mu.Unlock()
		return id, nil
	}
	return wire.SessionID{}, fmt.Errorf("no free session id from %s", base)
}

// cut keeps content within max bytes: its beginning and its end, with a
// line between saying how much of the middle was left out, each piece cut
// at a character boundary. A long reply is kept in part rather than lost.
func cut(content string, max int) string {
	if len(content) <= max {
		return content
	}
	mark := func(n int) string { return fmt.Sprintf("\n[... %d bytes cut here ...]\n", n) }
	room := max - len(mark(len(content)))
	head, tail := room/2, room-room/2
	for head > 0 && !utf8.RuneStart(content[head]) {
		head--
	}
	start := len(content) - tail
	for start < len(content) && !utf8.RuneStart(content[start]) {
		start++
	}
	return content[:head] + mark(start-head) + content[start:]
}
