package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

var (
	// ErrNoJob: RunNow named a job that is not in the set.
	ErrNoJob = errors.New("jobs: no such job")
	// ErrRunning: RunNow named a job whose previous run is still going.
	ErrRunning = errors.New("jobs: the job's previous run is still going")
	// ErrStopped: RunNow was called while Run is not running (before it
	// started or after it returned), when no one would wait for the run.
	ErrStopped = errors.New("jobs: the scheduler is not running")
)

const outcomeRunning = "running"

// maxWait bounds one wait of the scheduler's timer. Timers count elapsed
// time (Go's monotonic clock, which stops while the host is suspended),
// while due times are wall-clock times, so the scheduler looks at the wall
// clock at least this often: after a suspend or a clock step it is at most
// this late.
const maxWait = time.Minute

// Hooks is what the scheduler calls.
type Hooks struct {
	// Start runs one job run to its end (the coordinator's code: it starts
	// a session and waits for its turn). It is called in its own goroutine;
	// its error is recorded as the run's outcome. Its ctx ends when Run's
	// does.
	Start func(ctx context.Context, r Run) error
	// Skipped is told of a run not started because the job's previous run
	// was still going (to audit it). It is called from the scheduler's
	// goroutine, without the scheduler's lock; nil: nothing is told.
	Skipped func(r Run)
	// Log gets lines for brokerd's log; it may be called from several
	// goroutines at once. nil: nothing is logged.
	Log func(lines ...string)
}

// entry is one job of the current set and its next due time.
type entry struct {
	job  Job
	next time.Time // zero until Run starts
}

// Scheduler starts job runs when they are due. See New.
type Scheduler struct {
	statePath string
	clock     Clock
	hooks     Hooks
	wake      chan struct{} // Replace asks the loop to look again

	saveMu sync.Mutex // one state write at a time, of the latest state

	mu      sync.Mutex
	jobs    map[string]*entry
	records map[string]*stateRecord
	running map[string]bool
	started bool // Run was called
	active  bool // Run is scheduling: runs may start
	// suspended: the job files have a problem, so the set is empty, but
	// the records are kept for when the files are fixed (Suspend).
	suspended bool
	ctx       context.Context
	wg        sync.WaitGroup // the runs in flight
}

// New makes a scheduler for jobs, keeping its state at statePath
// (<home>/broker/jobs.json). A missing state file is a fresh start: no
// job has been seen, so none catches up. A damaged or unreadable one is
// logged with a runbook pointer, moved aside to <statePath>.damaged, and
// treated as fail closed: no catch-up run this start, but every job is
// scheduled normally. A catch-up run is an unattended session the owner did
// not watch start, and without the file the scheduler cannot tell a missed
// run from one that already ran; a missed run shows in `bxctl jobs` and can
// be started by hand, a duplicated one may not be undoable.
//
// err is set for a job set that is not valid (a name twice or not a job
// name, no schedule), a missing Start hook or clock, or a state file that
// is there but cannot be read for a reason other than damage (EIO,
// EACCES): that one is left as it is.
func New(jobs []Job, statePath string, clock Clock, h Hooks) (*Scheduler, error) {
	if h.Start == nil || clock == nil {
		return nil, errors.New("jobs: New needs a clock and a Start hook")
	}
	set, err := jobSet(jobs)
	if err != nil {
		return nil, err
	}
	if h.Log == nil {
		h.Log = func(...string) {}
	}
	if h.Skipped == nil {
		h.Skipped = func(Run) {}
	}
	s := &Scheduler{statePath: statePath, clock: clock, hooks: h, wake: make(chan struct{}, 1),
		jobs: set, running: map[string]bool{}}
	recs, err := readState(statePath)
	switch {
	case errors.Is(err, errDamaged):
		// No records: every job counts as first seen, so none catches up.
		h.Log(setAsideDamaged(statePath, err)...)
		recs = nil
	case err != nil:
		// Not damage: the file may be fine, and the first write would
		// replace it (issue 29, class 1).
		return nil, fmt.Errorf("jobs: the state file %s cannot be read: %w; brokerd does not start rather than write over it; %s",
			statePath, err, runbook.See("jobs-state-unreadable"))
	}
	if recs == nil {
		recs = map[string]*stateRecord{}
	}
	s.records = recs
	return s, nil
}

// jobSet checks jobs and indexes them by name.
func jobSet(jobs []Job) (map[string]*entry, error) {
	set := make(map[string]*entry, len(jobs))
	for _, j := range jobs {
		switch {
		case !wire.ValidID(j.Name):
			return nil, fmt.Errorf("jobs: %q is not a job name", j.Name)
		case set[j.Name] != nil:
			return nil, fmt.Errorf("jobs: job %q twice", j.Name)
		case j.Schedule == nil:
			return nil, fmt.Errorf("jobs: job %q has no schedule", j.Name)
		}
		set[j.Name] = &entry{job: j}
	}
	return set, nil
}

// namesLocked is the set's names, sorted, so that runs due together start in a
// stable order.
func (s *Scheduler) namesLocked() []string {
	names := make([]string, 0, len(s.jobs))
	for n := range s.jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Run schedules until ctx ends, then waits for the runs in flight (their
// ctx is cancelled with Run's) and returns nil. At start, each job with
// catch_up whose due time passed since the last one the scheduler dealt
// with (the host or brokerd was down) runs once, with Trigger CatchUp,
// however many slots it missed; a job seen for the first time is recorded
// as seen and has nothing to catch up. Run may be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("jobs: Run called twice")
	}
	s.started, s.active, s.ctx = true, true, ctx
	now := s.clock.Now()
	var starts []Run
	var logs []string
	for _, name := range s.namesLocked() {
		starts, logs = s.admitLocked(s.jobs[name], now, starts, logs)
	}
	// Records of jobs no longer in the set are dropped: the state file
	// describes the current jobs. Not while suspended: the set is empty
	// because its files have a problem, not because the jobs are gone.
	if !s.suspended {
		s.dropOthersLocked()
	}
	s.mu.Unlock()
	s.startAll(starts, logs)
	s.loop(ctx)
	s.mu.Lock()
	s.active = false
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// admitLocked brings e into the schedule at now, as Run's start does: a
// job seen for the first time is recorded as seen; one whose record shows
// a due time missed since it was last dealt with runs once as a catch-up
// (catch_up) or is logged as missed. s.mu is held and s.active is true.
func (s *Scheduler) admitLocked(e *entry, now time.Time, starts []Run, logs []string) ([]Run, []string) {
	name := e.job.Name
	rec := s.records[name]
	if rec == nil {
		rec = &stateRecord{Name: name, Checked: wire.TimestampOf(now)}
		s.records[name] = rec
	} else if missed := e.job.Schedule.Next(rec.Checked.Time()); !missed.IsZero() && !missed.After(now) {
		switch {
		case !e.job.CatchUp:
			logs = append(logs, fmt.Sprintf("jobs: %s: missed its run due %s while stopped; catch_up is false, so it waits for its next due time", name, wire.TimestampOf(missed)))
		default:
			starts = append(starts, s.beginLocked(e.job, missed, CatchUp, now))
		}
		rec.Checked = wire.TimestampOf(now)
	}
	e.next = e.job.Schedule.Next(now)
	return starts, logs
}

// dropOthersLocked forgets the records of jobs not in the set.
func (s *Scheduler) dropOthersLocked() {
	for name := range s.records {
		if s.jobs[name] == nil {
			delete(s.records, name)
		}
	}
}

// startAll logs, saves the state (with the runs begun), then launches them.
func (s *Scheduler) startAll(starts []Run, logs []string) {
	if len(logs) > 0 {
		s.hooks.Log(logs...)
	}
	s.save()
	for _, r := range starts {
		s.launch(r)
	}
}

// loop waits for the earliest due time, or for Replace, until ctx ends.
func (s *Scheduler) loop(ctx context.Context) {
	for {
		s.mu.Lock()
		wait := maxWait
		now := s.clock.Now()
		for _, e := range s.jobs {
			// A zero next is never due (tick skips it): counted here, its
			// wait would be negative and the loop would spin.
			if e.next.IsZero() {
				continue
			}
			if d := e.next.Sub(now); d < wait {
				wait = max(d, 0)
			}
		}
		s.mu.Unlock()
		t := s.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
			t.Stop()
		case <-t.C():
		}
		s.tick()
	}
}

// tick starts every job whose due time has come, or skips it if its
// previous run is still going; either way its next due time is the first
// after now (one run for a due time however late the scheduler is).
func (s *Scheduler) tick() {
	var starts, skips []Run
	s.mu.Lock()
	now := s.clock.Now()
	for _, name := range s.namesLocked() {
		e := s.jobs[name]
		if e.next.IsZero() || e.next.After(now) {
			continue
		}
		due := e.next
		e.next = e.job.Schedule.Next(now)
		s.records[name].Checked = wire.TimestampOf(due)
		if s.running[name] {
			skips = append(skips, Run{Job: e.job, Due: due, Trigger: Scheduled})
			continue
		}
		starts = append(starts, s.beginLocked(e.job, due, Scheduled, now))
	}
	s.mu.Unlock()
	if len(starts)+len(skips) == 0 {
		return
	}
	s.save()
	for _, r := range skips {
		s.hooks.Log(fmt.Sprintf("jobs: %s: run due %s skipped: the previous run is still going", r.Job.Name, wire.TimestampOf(r.Due)))
		s.hooks.Skipped(r)
	}
	for _, r := range starts {
		s.launch(r)
	}
}

// beginLocked marks a run of j as going and records it; the caller saves
// the state and then launches it. s.mu is held and s.active is true.
func (s *Scheduler) beginLocked(j Job, due time.Time, tr Trigger, now time.Time) Run {
	s.running[j.Name] = true
	s.wg.Add(1)
	rec := s.records[j.Name]
	if rec == nil {
		rec = &stateRecord{Name: j.Name, Checked: wire.TimestampOf(now)}
		s.records[j.Name] = rec
	}
	rec.Last = &stateRun{Due: wire.TimestampOf(due), Started: wire.TimestampOf(now), Trigger: tr, Outcome: outcomeRunning}
	return Run{Job: j, Due: due, Trigger: tr}
}

// launch runs r in its own goroutine, owned by Run through s.wg (added in
// beginLocked), and records its end.
func (s *Scheduler) launch(r Run) {
	s.hooks.Log(fmt.Sprintf("jobs: %s: run started (%s, due %s)", r.Job.Name, r.Trigger, wire.TimestampOf(r.Due)))
	go func() {
		defer s.wg.Done()
		err := s.hooks.Start(s.ctx, r)
		s.end(r, err)
	}()
}

// end records a run's outcome.
func (s *Scheduler) end(r Run, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "failed: " + err.Error()
	}
	s.mu.Lock()
	delete(s.running, r.Job.Name)
	if rec := s.records[r.Job.Name]; rec != nil && rec.Last != nil && rec.Last.Outcome == outcomeRunning {
		ended := wire.TimestampOf(s.clock.Now())
		rec.Last.Ended, rec.Last.Outcome = &ended, outcome
	}
	s.mu.Unlock()
	s.save()
	s.hooks.Log(fmt.Sprintf("jobs: %s: run ended: %s", r.Job.Name, outcome))
}

// RunNow starts the named job now (Trigger Manual, due now). It returns
// ErrNoJob, ErrRunning if a run of the job is still going (then nothing
// starts and Skipped is not called: the owner gets the error), or
// ErrStopped if Run is not scheduling.
func (s *Scheduler) RunNow(name string) (Run, error) {
	s.mu.Lock()
	e := s.jobs[name]
	switch {
	case !s.active:
		s.mu.Unlock()
		return Run{}, ErrStopped
	case e == nil:
		s.mu.Unlock()
		return Run{}, fmt.Errorf("%w: %q", ErrNoJob, name)
	case s.running[name]:
		s.mu.Unlock()
		return Run{}, fmt.Errorf("%w: %q", ErrRunning, name)
	}
	now := s.clock.Now()
	r := s.beginLocked(e.job, now, Manual, now)
	s.mu.Unlock()
	s.save()
	s.launch(r)
	return r, nil
}

// Status lists every job, sorted by name, with its last run and next due
// time.
func (s *Scheduler) Status() []JobStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	out := make([]JobStatus, 0, len(s.jobs))
	for _, name := range s.namesLocked() {
		e := s.jobs[name]
		st := JobStatus{Name: name, Schedule: e.job.Schedule.String(), Next: e.next}
		if st.Next.IsZero() {
			st.Next = e.job.Schedule.Next(now)
		}
		if rec := s.records[name]; rec != nil && rec.Last != nil {
			l := rec.Last
			st.Last = &LastRun{Due: l.Due.Time(), Started: l.Started.Time(), Trigger: l.Trigger, Outcome: l.Outcome}
			if l.Ended != nil {
				st.Last.Ended = l.Ended.Time()
			}
		}
		out = append(out, st)
	}
	return out
}

// Replace swaps the job set (the owner edited the job files). Runs in
// flight continue, and a job still running keeps its place: its next due
// time is skipped as usual. A job whose file is unchanged keeps its next
// due time; a changed or new one is due next by its (new) schedule from
// now, and a new one is recorded as seen. A job removed loses its record.
// An invalid set (a name twice, no schedule) is refused and the old set is
// kept. After Suspend, a job that has a record is admitted as at Run's
// start: a due time missed while the set was suspended (or brokerd was
// down) is caught up once if the job says catch_up, as if brokerd had
// started with the fixed files.
func (s *Scheduler) Replace(jobs []Job) error {
	set, err := jobSet(jobs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	now := s.clock.Now()
	resumed := s.suspended && s.active
	s.suspended = false
	var starts []Run
	var logs []string
	for name, e := range set {
		old := s.jobs[name]
		rec := s.records[name]
		if resumed && rec != nil {
			starts, logs = s.admitLocked(e, now, starts, logs)
			continue
		}
		if rec == nil {
			rec = &stateRecord{Name: name, Checked: wire.TimestampOf(now)}
			s.records[name] = rec
		}
		if old != nil && old.job.Sha256 == e.job.Sha256 && old.job.Schedule.String() == e.job.Schedule.String() {
			e.next = old.next
			continue
		}
		if s.started {
			e.next = e.job.Schedule.Next(now)
		}
		// The slots of a changed schedule before now were never due:
		// a restart must not catch one of them up.
		if ts := wire.TimestampOf(now); rec.Checked < ts {
			rec.Checked = ts
		}
	}
	s.jobs = set
	s.dropOthersLocked()
	s.mu.Unlock()
	s.startAll(starts, logs)
	s.wakeLoop()
	return nil
}

// Suspend empties the job set without forgetting it: the job files have a
// problem (jobs-invalid), so no job runs and none is listed until they are
// fixed, but every job's record (its last run, the latest due time dealt
// with) stays in the state file (issue 29, class 1: a guard that cannot
// read the set must not erase what it guards). Runs in flight continue.
// The next Replace ends the suspension. It may be called before Run.
func (s *Scheduler) Suspend() {
	s.mu.Lock()
	s.jobs = map[string]*entry{}
	s.suspended = true
	s.mu.Unlock()
	s.wakeLoop()
}

// wakeLoop asks the loop to look at the set again.
func (s *Scheduler) wakeLoop() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// save writes the current state. saveMu is taken before the snapshot, so
// the last write holds the latest state whatever order callers come in.
func (s *Scheduler) save() {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	recs := make(map[string]*stateRecord, len(s.records))
	for name, r := range s.records {
		c := *r
		if r.Last != nil {
			l := *r.Last
			c.Last = &l
		}
		recs[name] = &c
	}
	s.mu.Unlock()
	if err := writeState(s.statePath, recs); err != nil {
		s.hooks.Log(fmt.Sprintf("jobs: cannot write the state file: %v", err),
			"jobs: runs go on, but a restart may catch up a run again or miss one; "+runbook.See("jobs-state-unwritable"))
	}
}
